//! evalscope's `test_chat_template_error.py` (issue #1548) and issue 31's class 2: a tokenizer without a
//! chat template under a chat dataset stops the run with an error that names the tokenizer, the cause and
//! the ways out (drop `--tokenizer-path`; a tokenizer that ships a template and shares the vocabulary;
//! `--no-apply-chat-template`) instead of measuring bare text. evalscope raises it after the connection
//! test (exit 1, an empty run folder left); llmperf finds it with the dataset, before anything is sent or
//! written (exit 2), as for every other dataset error.

use super::{sim_bodies, tokenizer_without_template};
use crate::common::*;

/// Asserts that `err` is the actionable error for the tokenizer at `path`.
pub fn assert_actionable(err: &str, path: &std::path::Path) {
    for part in [
        &format!("`{}`", path.display()),
        "no chat template",
        "drop `--tokenizer-path`",
        "shares the vocabulary",
        "--no-apply-chat-template",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
}

#[test]
fn a_length_filter_through_a_missing_template_stops_before_anything_is_sent() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions");
    let tok = tokenizer_without_template(&run);
    let run = run
        .flags("--dataset line_by_line --number 2")
        .input("--dataset-path", "lines.txt", "hello world\nsecond line\n")
        .flag("--tokenizer-path", &tok);
    let err = run.fails(2);
    assert_actionable(&err, &tok);
    assert_eq!(run.out_entries(), 0, "nothing written");
    assert!(sim.requests().is_empty(), "no connection test, no request");
    // The same for the other datasets that filter lengths through the template, and for `random`, which
    // subtracts the template's length from its targets.
    for (dataset, path_line) in [
        ("openqa", "{\"question\": \"what is it\"}\n"),
        ("custom", "a prompt\n"),
    ] {
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--number 1")
            .flag("--dataset", dataset)
            .input("--dataset-path", "data.jsonl", path_line)
            .flag("--tokenizer-path", &tok);
        assert_actionable(&run.fails(2), &tok);
        assert_eq!(run.out_entries(), 0, "{dataset}: nothing written");
    }
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--dataset random --number 1 --min-prompt-length 8 --max-prompt-length 8")
        .flag("--tokenizer-path", &tok);
    assert_actionable(&run.fails(2), &tok);
    assert!(sim.requests().is_empty());
}

#[test]
fn no_apply_chat_template_is_the_way_out() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/completions");
    let tok = tokenizer_without_template(&run);
    let rows = run
        .flags("--dataset line_by_line --number 2 --no-apply-chat-template --no-test-connection")
        .input("--dataset-path", "lines.txt", "hello world\nsecond line\n")
        .flag("--tokenizer-path", &tok)
        .ok_dir("parallel_1_number_2")
        .rows();
    assert!(rows.iter().all(|r| r.success));
    let prompts: Vec<String> = sim_bodies(&sim)
        .iter()
        .map(|b| b["prompt"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["hello world", "second line"]);
}

#[test]
fn a_missing_template_fails_the_requests_whose_usage_it_would_count() {
    // evalscope counts a reply without usage through the template, so a tokenizer without one aborts the
    // run there; llmperf fails those requests with the same advice and goes on.
    let stub = StubServer::start(|_, _| {
        Reply::json(
            r#"{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}"#,
        )
    });
    let run = Run::with_url(&stub.url("/v1/chat/completions"));
    let tok = tokenizer_without_template(&run);
    let run = run
        .flags("--prompt 'hello there' --number 2 --no-stream --no-test-connection")
        .flag("--tokenizer-path", &tok);
    run.no_success();
    let rows = run.run_dir("parallel_1_number_2").rows();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(!r.success);
        assert_actionable(r.error.as_deref().unwrap_or(""), &tok);
    }
}
