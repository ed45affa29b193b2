//! Token-exact prompts with the real Qwen3 and SmolLM2 tokenizers: `--dataset random`, `--tokenize-prompt`,
//! chat templates with `chat_template_kwargs`, prefixes, seeds, tokenizer lookup in the model caches, the
//! token-count fallback, and the errors given before any request.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

pub fn shared_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("LLMPERF_SHARED_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared").to_string()),
    )
}

pub fn tokenizer_dir(name: &str) -> String {
    shared_dir()
        .join("tokenizers")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The raw `tokenizers` crate on a shared tokenizer: the independent counter the tests check against.
pub fn raw_tokenizer(name: &str) -> tokenizers::Tokenizer {
    tokenizers::Tokenizer::from_file(format!("{}/tokenizer.json", tokenizer_dir(name))).unwrap()
}

pub fn count(tok: &tokenizers::Tokenizer, text: &str) -> usize {
    tok.encode(text, false).unwrap().len()
}

fn bodies(sim: &llmperf::sim::SimServer) -> Vec<(String, Value)> {
    sim.requests()
        .into_iter()
        .map(|(path, body, _)| (path, serde_json::from_str(&body).unwrap()))
        .collect()
}

fn intended_column(db: &Path) -> Vec<Option<i64>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT intended_prompt_tokens FROM result ORDER BY rowid")
        .unwrap();
    let v = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    v
}

#[test]
fn tokenize_prompt_sends_exact_token_ids_with_a_shared_prefix() {
    for name in ["qwen3", "smollm2-135m-instruct"] {
        let sim = fast_sim();
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--dataset random")
            .flag("--tokenizer-path", tokenizer_dir(name))
            .flags("--tokenize-prompt --prefix-length 16 --min-prompt-length 40 --max-prompt-length 60 --number 12 --parallel 3 --warmup-num 2 --max-tokens 4 --seed 3 --no-test-connection");
        run.ok();
        let reqs = bodies(&sim);
        assert_eq!(reqs.len(), 14);
        let mut prefix: Option<Vec<Value>> = None;
        let mut lens = Vec::new();
        for (path, body) in &reqs {
            assert_eq!(
                path, "/v1/completions",
                "{name}: token ids go to completions"
            );
            let ids = body["prompt"].as_array().expect("a token-id list");
            assert!(ids.iter().all(Value::is_u64));
            assert!(
                (56..=76).contains(&ids.len()),
                "{name}: 16 + [40, 60]: {}",
                ids.len()
            );
            assert_eq!(
                *prefix.get_or_insert(ids[..16].to_vec()),
                ids[..16],
                "{name}: shared prefix"
            );
            lens.push(ids.len() as i64);
        }
        let run = run.single_run();
        // The server's prompt_tokens (here: the id count) is exactly what llmperf intended.
        let summary = run.summary();
        assert_eq!(
            summary["Exact Input Tokens (%)"], 100.0,
            "{name}: {summary}"
        );
        assert_eq!(summary["Max Input Token Error"], 0);
        // The simulator reports `prompt_tokens_details.cached_tokens: 0`.
        assert_eq!(summary["KV Cache Hit Rate (%)"], 0.0);
        let stored = run.rows();
        let intended = intended_column(&run.db());
        for (row, want) in stored.iter().zip(&intended) {
            let body: Value = serde_json::from_str(&row.request).unwrap();
            assert_eq!(Some(body["prompt"].as_array().unwrap().len() as i64), *want);
            assert_eq!(row.prompt_tokens, *want);
        }
        let args = run.args();
        assert_eq!(args["tokenize_prompt"], true);
        assert_eq!(args["prefix_length"], 16);
        assert_eq!(args["tokenizer_path"], tokenizer_dir(name).as_str());
    }
}

/// The seed-000 shape: 512 tokens in through the Qwen3 chat template with `enable_thinking: false`.
#[test]
fn chat_template_prompts_render_to_exactly_the_target_length() {
    let cases = [
        // Qwen3's template with enable_thinking=false, written out by hand.
        ("qwen3", "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        // SmolLM2's ChatML with its default system prompt.
        (
            "smollm2-135m-instruct",
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        ),
    ];
    for (name, shape) in cases {
        let sim = fast_sim();
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--dataset random")
            .flag("--tokenizer-path", tokenizer_dir(name))
            .flags(r#"--min-prompt-length 512 --max-prompt-length 512 --prefix-length 0 --max-tokens 4 --temperature 0 --seed 42 --number 10 --extra-args '{"ignore_eos": true, "chat_template_kwargs": {"enable_thinking": false}}' --no-test-connection"#);
        run.ok();
        let tok = raw_tokenizer(name);
        let reqs = bodies(&sim);
        assert_eq!(reqs.len(), 10);
        for (path, body) in &reqs {
            assert_eq!(path, "/v1/chat/completions");
            let content = body["messages"][0]["content"].as_str().unwrap();
            let rendered = shape.replace("{}", content);
            assert_eq!(
                count(&tok, &rendered),
                512,
                "{name}: rendered request length"
            );
            assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        }
        let intended = intended_column(&run.single_run().db());
        assert!(intended.iter().all(|i| *i == Some(512)), "{intended:?}");
    }
}

#[test]
fn same_seed_gives_byte_identical_bodies_and_sweeps_move_the_offset() {
    let run = |seed: &str| {
        let sim = fast_sim();
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--dataset random")
            .flag("--tokenizer-path", tokenizer_dir("qwen3"))
            .flags("--min-prompt-length 30 --max-prompt-length 80 --prefix-length 8 --parallel 1 2 --number 4 4")
            .flag("--seed", seed)
            .flags("--dataset-offset 5 --no-test-connection");
        run.ok();
        let offsets: Vec<Value> = ["parallel_1_number_4", "parallel_2_number_4"]
            .iter()
            .map(|d| run.run_dir(d).args()["dataset_offset"].clone())
            .collect();
        assert_eq!(offsets, vec![Value::from(5), Value::from(9)]);
        let mut bodies: Vec<String> = sim.requests().into_iter().map(|r| r.1).collect();
        // Arrival order within a run with 2 in flight may vary: compare each run's set.
        bodies[..4].sort();
        bodies[4..].sort();
        bodies
    };
    let a = run("42");
    assert_eq!(a.len(), 8);
    assert_eq!(a, run("42"), "same seed → byte-identical bodies");
    assert_ne!(a, run("43"));
    let first: std::collections::BTreeSet<&String> = a[..4].iter().collect();
    assert!(
        a[4..].iter().all(|b| !first.contains(b)),
        "the second run sends other prompts"
    );
}

#[test]
fn missing_usage_is_counted_with_the_tokenizer() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--dataset random")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(r#"--min-prompt-length 100 --max-prompt-length 120 --max-tokens 7 --number 5 --no-test-connection"#)
        .flags(r#"--extra-args '{"ignore_eos": true, "stream_options": {"include_usage": false}}'"#);
    run.ok();
    let run = run.single_run();
    let tok = raw_tokenizer("qwen3");
    for row in run.rows() {
        assert!(row.success, "{row:?}");
        // The simulator streams "hello " 7 times.
        let output = "hello ".repeat(7);
        assert_eq!(row.completion_tokens, Some(count(&tok, &output) as i64));
        let body: Value = serde_json::from_str(&row.request).unwrap();
        let content = body["messages"][0]["content"].as_str().unwrap();
        let rendered = format!("<|im_start|>user\n{content}<|im_end|>\n<|im_start|>assistant\n");
        assert_eq!(row.prompt_tokens, Some(count(&tok, &rendered) as i64));
    }
    assert_eq!(run.summary()["Exact Input Tokens (%)"], 100.0);
}

#[test]
fn hub_ids_resolve_from_the_hugging_face_and_modelscope_caches() {
    let cache = tempfile::tempdir().unwrap();
    let link = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        for f in ["tokenizer.json", "tokenizer_config.json"] {
            std::os::unix::fs::symlink(shared_dir().join("tokenizers/qwen3").join(f), dir.join(f))
                .unwrap();
        }
    };
    let hf = cache.path().join("hf");
    link(&hf.join("models--Qwen--Qwen3.5-4B/snapshots/0123abcd"));
    std::fs::create_dir_all(hf.join("models--Qwen--Qwen3.5-4B/refs")).unwrap();
    std::fs::write(hf.join("models--Qwen--Qwen3.5-4B/refs/main"), "0123abcd").unwrap();
    let ms = cache.path().join("ms");
    link(&ms.join("hub/models/Qwen/Qwen3___5-2B"));
    let empty = cache.path().join("empty");
    for (id, env) in [
        (
            "Qwen/Qwen3.5-4B",
            [
                ("HF_HUB_CACHE", hf.to_str().unwrap()),
                ("MODELSCOPE_CACHE", empty.to_str().unwrap()),
            ],
        ),
        (
            "Qwen/Qwen3.5-2B",
            [
                ("HF_HUB_CACHE", empty.to_str().unwrap()),
                ("MODELSCOPE_CACHE", ms.to_str().unwrap()),
            ],
        ),
    ] {
        let sim = fast_sim();
        Run::at(&sim, "/v1/chat/completions")
            .flags("--dataset random")
            .flag("--tokenizer-path", id)
            .flags("--tokenize-prompt --min-prompt-length 10 --max-prompt-length 10 --number 2")
            .flags("--no-test-connection")
            .env(env[0].0, env[0].1)
            .env(env[1].0, env[1].1)
            .ok();
        assert_eq!(sim.requests().len(), 2, "{id}");
    }
}

#[test]
fn tokenizer_and_dataset_errors_come_before_any_request() {
    let sim = fast_sim();
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap();
    let short = format!(
        "--dataset random --tokenizer-path '{}' --max-prompt-length 5",
        tokenizer_dir("qwen3")
    );
    let cases = [
        (
            "--dataset random --tokenizer-path Nobody/NoSuchModel",
            "Looked in",
        ),
        (
            "--dataset random --tokenizer-path /no/such/dir/tokenizer",
            "not a local folder or file",
        ),
        ("--dataset random", "--tokenizer-path"),
        ("--dataset no_such_dataset", "not a known dataset"),
        ("--dataset flickr8k", "--dataset-path"),
        ("--prompt x --tokenize-prompt", "--tokenizer-path"),
        (short.as_str(), "chat template"),
    ];
    for (args, needle) in cases {
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--number 2")
            .flags(args)
            .env("HF_HUB_CACHE", empty)
            .env("MODELSCOPE_CACHE", empty);
        let err = run.fails(2);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(run.out_entries(), 0, "{args:?}: no output written");
    }
    assert!(sim.requests().is_empty(), "no request before the errors");
}
