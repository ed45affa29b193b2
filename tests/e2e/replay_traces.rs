//! `--dataset burstgpt_trace` against the real server: with the SmolLM2 tokenizer (which predicts the
//! server's count, chat template included) every replayed prompt reaches exactly the trace's
//! `Request tokens`, and the generated length follows `Response tokens` with `match_output_length`.

use crate::server::RealServer;

#[test]
fn burstgpt_prompts_have_the_recorded_token_counts_on_the_real_server() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server
        .run_at("/chat/completions")
        .flags("--open-loop --dataset burstgpt_trace")
        .input(
            "--dataset-path",
            "BurstGPT_sample.csv",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
             10,ChatGPT,120,4,124,Conversation log\n\
             10.4,GPT-4,57,3,60,API log\n\
             10.9,ChatGPT,200,0,200,Conversation log\n\
             11.1,ChatGPT,33,2,35,Conversation log\n",
        )
        .flag("--tokenizer-path", crate::tokens::smollm2())
        .flags(r#"--dataset-args '{"match_output_length": true}' --extra-args '{"cache_prompt": false}'"#)
        .ok_dir("rate_-1.0_number_1000");
    let mut rows = run.rows();
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
    let s = run.summary();
    assert_eq!(s["Exact Input Tokens (%)"], 100.0, "{s}");
    assert!(s["Trace Send Lag Max (ms)"].as_f64().unwrap() >= 0.0);
}
