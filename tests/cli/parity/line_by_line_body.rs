//! evalscope's `test_line_by_line_body.py` (PR #1485): a `line_by_line` line that is a whole request body
//! keeps its own fields and the flags only fill the ones it lacks (`max_tokens`, `temperature`, `model`,
//! `stream`); `stream_options` is present exactly when the effective `stream` is true (a body's own
//! `stream_options` kept); message lists and plain prompts get the flags' values.

use serde_json::{json, Value};

use super::sim_bodies;
use crate::common::*;

/// Sends `number` requests from `lines` (cycled) at the simulator's `path` with `flags`; returns the bodies
/// sent.
fn send_n(path: &str, lines: &[&str], flags: &str, number: usize) -> Vec<Value> {
    let sim = fast_sim();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Run::at(&sim, path)
        .flags("--dataset line_by_line --no-test-connection")
        .flags(flags)
        .flag("--number", number.to_string())
        .input("--dataset-path", "lines.txt", text)
        .ok();
    sim_bodies(&sim)
}

/// Sends each line once, in order.
fn send(path: &str, lines: &[&str], flags: &str) -> Vec<Value> {
    send_n(path, lines, flags, lines.len())
}

const HI: &str = r#"[{"role": "user", "content": "hi"}]"#;

#[test]
fn a_whole_body_keeps_its_fields_and_the_flags_fill_the_gaps() {
    let bodies = send(
        "/v1/chat/completions",
        &[
            &format!(r#"{{"messages": {HI}, "temperature": 0.6, "max_tokens": 128}}"#),
            &format!(r#"{{"messages": {HI}}}"#),
            &format!(r#"{{"model": "other-model", "messages": {HI}}}"#),
            &format!(r#"{{"messages": {HI}, "stream": false}}"#),
            &format!(r#"{{"messages": {HI}, "stream": true}}"#),
            &format!(
                r#"{{"messages": {HI}, "stream": true, "stream_options": {{"include_usage": false}}}}"#
            ),
        ],
        "",
    );
    assert_eq!(bodies.len(), 6);
    assert_eq!(
        (
            bodies[0]["temperature"].clone(),
            bodies[0]["max_tokens"].clone()
        ),
        (json!(0.6), json!(128))
    );
    assert_eq!(bodies[1]["max_tokens"], 2048);
    assert_eq!(bodies[1]["temperature"], 0.0);
    assert_eq!(bodies[1]["model"], "m");
    assert_eq!(
        bodies[1]["stream"], true,
        "the missing stream comes from the flags"
    );
    assert_eq!(bodies[1]["stream_options"], json!({"include_usage": true}));
    assert_eq!(bodies[2]["model"], "other-model");
    assert_eq!(bodies[3]["stream"], false);
    assert!(bodies[3].get("stream_options").is_none());
    assert_eq!(bodies[4]["stream_options"], json!({"include_usage": true}));
    assert_eq!(bodies[5]["stream_options"], json!({"include_usage": false}));
}

#[test]
fn a_body_stream_wins_over_no_stream_and_lists_and_prompts_take_the_flags() {
    let bodies = send(
        "/v1/chat/completions",
        &[&format!(r#"{{"messages": {HI}, "stream": true}}"#), HI],
        "--no-stream",
    );
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        bodies[1]["messages"],
        serde_json::from_str::<Value>(HI).unwrap()
    );
    assert_eq!(bodies[1]["stream"], false);
    assert!(bodies[1].get("stream_options").is_none());
    assert_eq!(bodies[1]["max_tokens"], 2048);
    assert_eq!(bodies[1]["temperature"], 0.0);
    assert_eq!(bodies[1]["model"], "m");
    // A plain line to a completions endpoint is a prompt with the flags' values; a body line cycled into a
    // later request is sent the same (the first request did not change the dataset's body).
    let bodies = send_n(
        "/v1/completions",
        &[r#"{"prompt": "x", "temperature": 0.5}"#, "hello"],
        "",
        3,
    );
    assert_eq!(bodies[1]["prompt"], "hello");
    assert_eq!(bodies[1]["model"], "m");
    assert_eq!(bodies[0], bodies[2]);
    assert_eq!(bodies[0]["temperature"], 0.5);
    assert_eq!(bodies[0]["max_tokens"], 2048);
}
