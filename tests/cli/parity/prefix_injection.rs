//! evalscope's `test_prefix_injection.py` (issue #1524) and issue 31's class 3: `--dataset-args`
//! `prefix_file` fills each prompt up to exactly `target_input_len` tokens with real text, the prefix
//! tiled when the file is short and topped up when re-tokenisation makes it come out short; a conversation
//! dataset budgets the bare content of every message, skips a conversation already longer than the target
//! and never cuts a turn; an empty prefix file, a missing one, one without `target_input_len` or with
//! `input_len_mode` drop are rejected. Measured with the real Qwen3 tokenizer (evalscope's tests use one
//! token per character).

use serde_json::{json, Value};

use super::sim_bodies;
use crate::common::*;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

const TARGET: usize = 40;
/// A corpus whose tiling re-encodes short: "dog." + "The" merge across each join.
const CORPUS: &str = "The quick brown fox jumps over the lazy dog.";

/// A `line_by_line` run of `lines` at `path` with a prefix file and `dataset_args` (JSON members after
/// `target_input_len` and `prefix_file`); returns the bodies sent.
fn line_run(path: &str, lines: &str, corpus: &str, dataset_args: &str) -> (Run, Vec<Value>) {
    let sim = fast_sim();
    let run = Run::at(&sim, path);
    let prefix = run.file("prefix.txt", corpus);
    let args = format!(
        r#"{{"target_input_len": {TARGET}, "prefix_file": "{}"{dataset_args}}}"#,
        prefix.display()
    );
    let run = run
        .flags("--dataset line_by_line --number 1 --no-test-connection")
        .input("--dataset-path", "lines.txt", lines)
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flag("--dataset-args", args);
    run.ok();
    let bodies = sim_bodies(&sim);
    (run, bodies)
}

fn contents(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_system_prefix_fills_the_prompt_to_exactly_the_target() {
    let tok = raw_tokenizer("qwen3");
    // CORPUS drifts when tiled (short after re-encoding); the prefix is topped up to the exact budget.
    for corpus in [CORPUS, "PQR"] {
        let (_run, bodies) = line_run("/v1/chat/completions", "abc\n", corpus, "");
        let messages = contents(&bodies[0]);
        let roles: Vec<&str> = messages.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(roles, ["system", "user"], "{corpus}");
        assert_eq!(messages[1].1, "abc");
        let total: usize = messages.iter().map(|(_, c)| count(&tok, c)).sum();
        assert_eq!(total, TARGET, "{corpus}: {messages:?}");
        // Real text from the file, repeated when the file is shorter than the budget.
        assert!(
            corpus.repeat(TARGET).starts_with(&messages[0].1),
            "{messages:?}"
        );
    }
}

#[test]
fn a_user_prefix_goes_before_the_prompt_and_a_completions_prompt_is_text() {
    let tok = raw_tokenizer("qwen3");
    let budget = TARGET - count(&tok, "abc");
    let (_run, bodies) = line_run(
        "/v1/chat/completions",
        "abc\n",
        CORPUS,
        r#", "prefix_role": "user""#,
    );
    let messages = contents(&bodies[0]);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].0, "user");
    let prefix = messages[0]
        .1
        .strip_suffix("abc")
        .expect("ends with the prompt");
    assert_eq!(count(&tok, prefix), budget);
    // No chat template: `prefix_role` system falls back to text before the prompt.
    let (_run, bodies) = line_run("/v1/completions", "abc\n", CORPUS, "");
    let prompt = bodies[0]["prompt"].as_str().unwrap();
    let prefix = prompt.strip_suffix("abc").expect("ends with the prompt");
    assert_eq!(count(&tok, prefix), budget);
}

#[test]
fn a_prompt_that_fills_the_target_gets_no_prefix_and_json_lines_are_refused() {
    let tok = raw_tokenizer("qwen3");
    let long = "word ".repeat(100);
    let (_run, bodies) = line_run("/v1/chat/completions", &format!("{long}\n"), CORPUS, "");
    let messages = contents(&bodies[0]);
    assert_eq!(messages.len(), 1, "cut to the target: no budget left");
    assert_eq!(count(&tok, &messages[0].1), TARGET);
    // JSON lines bypass the fitting, so length control refuses them (with or without a prefix file).
    let sim = fast_sim();
    let holder = Run::new();
    let prefix = holder.file("prefix.txt", CORPUS);
    for args in [
        r#"{"target_input_len": 10}"#.to_string(),
        format!(
            r#"{{"target_input_len": 10, "prefix_file": "{}"}}"#,
            prefix.display()
        ),
    ] {
        for line in [
            r#"[{"role": "user", "content": "abc"}]"#,
            r#"{"messages": [{"role": "user", "content": "abc"}], "max_tokens": 8}"#,
        ] {
            let run = Run::at(&sim, "/v1/chat/completions")
                .flags("--dataset line_by_line --number 1")
                .input("--dataset-path", "lines.txt", format!("{line}\nabc\n"))
                .flag("--tokenizer-path", tokenizer_dir("qwen3"))
                .flag("--dataset-args", &args);
            let err = run.fails(2);
            assert!(err.contains("plain-text lines"), "{err}");
            assert_eq!(run.out_entries(), 0);
        }
    }
    assert!(sim.requests().is_empty());
}

/// A `share_gpt_zh` run over `records` (one JSON conversation per line) with `dataset_args`; returns the
/// distinct bodies sent (the items are cycled).
fn conversation_run(records: &[Value], dataset_args: &str) -> Vec<Value> {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions");
    let prefix = run.file("prefix.txt", CORPUS);
    let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
    let args = dataset_args.replace("PREFIX", &prefix.display().to_string());
    run.flags("--dataset share_gpt_zh --number 2 --no-test-connection")
        .input("--dataset-path", "common_zh_70k.jsonl", lines)
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flag("--dataset-args", args)
        .ok();
    let mut bodies = sim_bodies(&sim);
    bodies.dedup();
    bodies
}

fn record(turns: &[(&str, &str)]) -> Value {
    json!({"conversation": turns.iter().map(|(h, a)| json!({"human": h, "assistant": a})).collect::<Vec<_>>()})
}

#[test]
fn a_conversation_budget_counts_every_message_and_longer_ones_are_skipped() {
    let tok = raw_tokenizer("qwen3");
    let short = record(&[("hi", "yo"), ("abc", "")]);
    let content = count(&tok, "hi") + count(&tok, "yo") + count(&tok, "abc");
    let with_prefix = format!(r#"{{"target_input_len": {TARGET}, "prefix_file": "PREFIX"}}"#);
    let bodies = conversation_run(std::slice::from_ref(&short), &with_prefix);
    assert_eq!(bodies.len(), 1);
    let messages = contents(&bodies[0]);
    let roles: Vec<&str> = messages.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(
        count(&tok, &messages[0].1),
        TARGET - content,
        "history counts"
    );
    assert_eq!(messages[3].1, "abc", "no turn is cut");
    // `prefix_role` user: before the first message.
    let user_prefix = format!(
        r#"{{"target_input_len": {TARGET}, "prefix_file": "PREFIX", "prefix_role": "user"}}"#
    );
    let messages = contents(&conversation_run(std::slice::from_ref(&short), &user_prefix)[0]);
    let roles: Vec<&str> = messages.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let prefix = messages[0]
        .1
        .strip_suffix("hi")
        .expect("ends with the first turn");
    assert_eq!(count(&tok, prefix), TARGET - content);
    // A conversation longer than the target is skipped whole, not cut: only the short one is sent.
    let long = record(&[("hi", "yo"), (&"word ".repeat(60), "")]);
    let bodies = conversation_run(&[long, short], &with_prefix);
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(contents(&bodies[0])[3].1, "abc");
}

#[test]
fn without_a_prefix_only_the_last_turn_is_fitted() {
    let tok = raw_tokenizer("qwen3");
    let history = "a".repeat(80);
    let long = record(&[(&history, "b"), (&"word ".repeat(60), "")]);
    let bodies = conversation_run(&[long], &format!(r#"{{"target_input_len": {TARGET}}}"#));
    let messages = contents(&bodies[0]);
    assert_eq!(
        messages[0].1, history,
        "the history is neither counted nor cut"
    );
    assert_eq!(count(&tok, &messages[2].1), TARGET, "the last turn is cut");
    // `drop` skips a conversation whose last turn is shorter than the target.
    let short = record(&[("hi", "yo"), ("abc", "")]);
    let long = record(&[("hi", "yo"), (&"word ".repeat(60), "")]);
    let bodies = conversation_run(
        &[short, long],
        &format!(r#"{{"target_input_len": {TARGET}, "input_len_mode": "drop"}}"#),
    );
    assert_eq!(bodies.len(), 1);
    assert_eq!(count(&tok, &contents(&bodies[0])[2].1), TARGET);
}

#[test]
fn bad_prefix_settings_are_refused_before_anything_is_sent() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions");
    let empty = run.file("empty.txt", "");
    let corpus = run.file("prefix.txt", CORPUS);
    for (args, says) in [
        (
            format!(
                r#"{{"target_input_len": 10, "prefix_file": "{}.nope"}}"#,
                corpus.display()
            ),
            "no such file",
        ),
        (
            format!(
                r#"{{"target_input_len": 10, "prefix_file": "{}"}}"#,
                empty.display()
            ),
            "empty",
        ),
        (
            format!(r#"{{"prefix_file": "{}"}}"#, corpus.display()),
            "needs target_input_len",
        ),
        (
            format!(
                r#"{{"target_input_len": 10, "prefix_file": "{}", "input_len_mode": "drop"}}"#,
                corpus.display()
            ),
            "incompatible",
        ),
    ] {
        let run = Run::at(&sim, "/v1/chat/completions")
            .flags("--dataset line_by_line --number 1")
            .input("--dataset-path", "lines.txt", "abc\n")
            .flag("--tokenizer-path", tokenizer_dir("qwen3"))
            .flag("--dataset-args", &args);
        let err = run.fails(2);
        assert!(
            err.contains("prefix_file") && err.contains(says),
            "{args}: {err}"
        );
        assert_eq!(run.out_entries(), 0);
    }
    assert!(sim.requests().is_empty());
}
