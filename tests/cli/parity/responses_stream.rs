//! A Responses API stream that ends cleanly without `response.completed` (issue 31, class 1): evalscope
//! 1.14.1 keeps it a success and, with `--tokenizer-path`, counts its tokens with the tokenizer (the prompt
//! as the bare tokens of `input`, no chat template; the output as the deltas' text); without a tokenizer
//! it has no token counts (evalscope aborts the run, llmperf fails the request). A chat stream cut off
//! before `[DONE]` and usage stays a failure even with a tokenizer (a deliberate difference: its output
//! count would be short).

use crate::common::*;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

/// `--api openai_responses` at the simulator's `/v1/responses`, three requests whose streams misbehave as
/// `fault` says.
fn responses_run(sim: &llmperf::sim::SimServer, fault: &str) -> Run {
    Run::at(sim, "/v1/responses")
        .flags("--api openai_responses --number 3 --max-tokens 5 --no-test-connection")
        .flags("--prompt 'hello there friend'")
        .flag("--headers", format!("x-llmperf-fault={fault}"))
}

#[test]
fn a_responses_stream_without_completed_is_counted_by_the_tokenizer() {
    let tok = raw_tokenizer("qwen3");
    // The simulator's output is the text `hello ` once per token: `truncated` ends after the first delta
    // (one token), `no-done` sends every delta (5, the cap) and leaves out `response.completed`.
    for (fault, output_text) in [("truncated", "hello "), ("no-done", &*"hello ".repeat(5))] {
        for chat in [false, true] {
            let sim = fast_sim();
            let mut run =
                responses_run(&sim, fault).flag("--tokenizer-path", tokenizer_dir("qwen3"));
            if chat {
                run = run.flags("--apply-chat-template");
            }
            let rows = run.ok_dir("parallel_1_number_3").rows();
            assert_eq!(rows.len(), 3);
            for r in &rows {
                assert!(r.success, "{fault} chat={chat}: {:?}", r.error);
                assert!(r.is_stream);
                // The bare tokens of `input`: the text, or the content of its one message (no template).
                assert_eq!(
                    r.prompt_tokens,
                    Some(count(&tok, "hello there friend") as i64),
                    "{fault} chat={chat}"
                );
                assert_eq!(
                    r.completion_tokens,
                    Some(count(&tok, output_text) as i64),
                    "{fault} chat={chat}"
                );
            }
            let sent: serde_json::Value = serde_json::from_str(&rows[0].request).unwrap();
            assert_eq!(sent["input"].is_array(), chat, "{sent}");
        }
    }
}

#[test]
fn without_a_tokenizer_a_responses_stream_without_completed_fails() {
    let sim = fast_sim();
    let run = responses_run(&sim, "truncated");
    run.no_success();
    let rows = run.run_dir("parallel_1_number_3").rows();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(!r.success);
        let error = r.error.as_deref().unwrap_or("");
        assert!(error.contains("response.completed"), "{error}");
    }
    let summary = run.run_dir("parallel_1_number_3").summary();
    assert_eq!(summary["Failures By Kind"]["bad_response"], 3);
}

#[test]
fn a_chat_stream_cut_off_stays_a_failure_with_a_tokenizer() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--number 3 --max-tokens 5 --no-test-connection --prompt 'hello there friend'")
        .flags("--headers x-llmperf-fault=truncated")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    run.no_success();
    let rows = run.run_dir("parallel_1_number_3").rows();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(!r.success);
        let error = r.error.as_deref().unwrap_or("");
        assert!(error.contains("[DONE]"), "{error}");
    }
}
