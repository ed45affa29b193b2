//! evalscope's `test_request_build_errors.py` (issue #1565): a request that cannot be built (a malformed
//! `--query-template`, a missing `@file`, a chat template the `--tokenize-prompt` tokenizer lacks) is a
//! configuration error that ends the run at once — never retried by the connection test until
//! `--total-timeout`, never degraded into a missing request. llmperf finds all three before the connection
//! test: exit 2, nothing sent, nothing written.

use super::tokenizer_without_template;
use crate::common::*;
use crate::parity::chat_template_error::assert_actionable;

#[test]
fn build_errors_stop_the_run_before_the_connection_test() {
    let sim = fast_sim();
    for (template, says) in [
        (
            r#"{"stream": true, oops-not-json"#.to_string(),
            "not valid JSON",
        ),
        ("@/nonexistent/nope.json".to_string(), "cannot read"),
    ] {
        // A long total timeout: a retried build error would keep the run alive far past the test.
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--prompt hello --number 1 --total-timeout 600")
            .flag("--query-template", &template);
        let err = run.fails(2);
        assert!(
            err.contains("--query-template") && err.contains(says),
            "{err}"
        );
        assert_eq!(run.out_entries(), 0);
    }
    let run = Run::at(&sim, "/v1/chat/completions");
    let tok = tokenizer_without_template(&run);
    let run = run
        .flags("--dataset line_by_line --tokenize-prompt --number 1 --total-timeout 600")
        .input(
            "--dataset-path",
            "lines.txt",
            "[{\"role\": \"user\", \"content\": \"hello\"}]\n",
        )
        .flag("--tokenizer-path", &tok);
    assert_actionable(&run.fails(2), &tok);
    assert_eq!(run.out_entries(), 0);
    assert!(sim.requests().is_empty(), "no connection test was tried");
}
