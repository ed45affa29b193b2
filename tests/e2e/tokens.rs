//! Token-exact prompts against the real server, with the SmolLM2 tokenizer that predicts it exactly:
//! token-id prompts on `/v1/completions`, templated chat prompts, and embeddings.

use std::path::PathBuf;

use crate::server::RealServer;

pub fn smollm2() -> String {
    let shared = std::env::var("LLMPERF_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    shared
        .join("tokenizers/smollm2-135m-instruct")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn tokenize_prompt_gives_the_server_exactly_prefix_plus_input_tokens() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server.run_at("/chat/completions")
        .flags("--dataset random")
        .flag("--tokenizer-path", smollm2())
        .flags(r#"--tokenize-prompt --prefix-length 16 --min-prompt-length 48 --max-prompt-length 48 --max-tokens 4 --number 4 --seed 7 --extra-args '{"ignore_eos": true, "cache_prompt": false}'"#)
        .ok_dir("parallel_1_number_4");
    let rows = run.rows();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert!(r.success, "{:?}", r.error);
        assert_eq!(
            r.prompt_tokens,
            Some(64),
            "server usage.prompt_tokens = 16 + 48"
        );
        assert_eq!(r.completion_tokens, Some(4));
    }
}

#[test]
fn chat_prompts_reach_the_intended_length_with_the_servers_tokenizer() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server.run()
        .flags("--dataset random")
        .flag("--tokenizer-path", smollm2())
        .flags(r#"--min-prompt-length 40 --max-prompt-length 64 --max-tokens 2 --number 8 --seed 3 --extra-args '{"cache_prompt": false}'"#)
        .ok_dir("parallel_1_number_8");
    let s = run.summary();
    assert_eq!(s["Success Requests"], 8);
    let exact = s["Exact Input Tokens (%)"]
        .as_f64()
        .expect("input-length report");
    assert!(
        exact >= 99.0,
        "server prompt tokens equal the intended length: {s}"
    );
    let avg = s["Avg Input Tokens"].as_f64().unwrap();
    assert!((40.0..=64.0).contains(&avg), "{avg}");
}

#[test]
fn embeddings_on_an_embedding_server() {
    let Some(server) = RealServer::start(true) else {
        return;
    };
    let run = server
        .run()
        .flags("--api openai_embedding --dataset random_embedding")
        .flag("--tokenizer-path", smollm2())
        .flags("--min-prompt-length 16 --max-prompt-length 32 --number 6 --parallel 2")
        .ok_dir("parallel_2_number_6");
    let s = run.summary();
    assert_eq!(s["Success Requests"], 6, "{s}");
    assert!(s["Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
    let p = run.percentiles();
    let keys: Vec<&String> = p[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "Percentiles",
            "Latency (s)",
            "Input tokens",
            "Input (tok/s)"
        ]
    );
    let rows = run.rows();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.success && r.prompt_tokens.unwrap() > 0));
}
