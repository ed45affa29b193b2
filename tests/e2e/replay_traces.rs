//! `--dataset burstgpt_trace` against the real server: with the SmolLM2 tokenizer (which predicts the
//! server's count, chat template included) every replayed prompt reaches exactly the trace's
//! `Request tokens`, and the generated length follows `Response tokens` with `match_output_length`.

use crate::common::*;
use crate::server::{RealServer, MODEL};

#[test]
fn burstgpt_prompts_have_the_recorded_token_counts_on_the_real_server() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("BurstGPT_sample.csv");
    std::fs::write(
        &file,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         10,ChatGPT,120,4,124,Conversation log\n\
         10.4,GPT-4,57,3,60,API log\n\
         10.9,ChatGPT,200,0,200,Conversation log\n\
         11.1,ChatGPT,33,2,35,Conversation log\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(&llmperf(
        &out,
        &[
            "--url",
            &format!("{}/chat/completions", server.v1()),
            "--model",
            MODEL,
            "--open-loop",
            "--dataset",
            "burstgpt_trace",
            "--dataset-path",
            file.to_str().unwrap(),
            "--tokenizer-path",
            &crate::tokens::smollm2(),
            "--dataset-args",
            r#"{"match_output_length": true}"#,
            "--extra-args",
            r#"{"cache_prompt": false}"#,
        ],
    ));
    let run = run_root(&out, MODEL).join("rate_-1.0_number_1000");
    let mut rows = rows(&run.join("benchmark_data.db"));
    rows.sort_by(|a, b| a.scheduled_time.partial_cmp(&b.scheduled_time).unwrap());
    let got: Vec<(Option<i64>, Option<i64>)> = rows
        .iter()
        .map(|r| (r.prompt_tokens, r.completion_tokens))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(120), Some(4)),
            (Some(57), Some(3)),
            (Some(33), Some(2))
        ],
        "server prompt_tokens = Request tokens; the failed row is skipped"
    );
    let s = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(s["Exact Input Tokens (%)"], 100.0, "{s}");
    assert!(s["Trace Send Lag Max (ms)"].as_f64().unwrap() >= 0.0);
}
