//! evalscope's `test_dataset_args.py` (PR #1483): `--dataset-args` is checked against the dataset's own
//! schema (the real-text datasets take the input-length keys, the multi-turn datasets their own, the rest
//! none; unknown keys, a bad `input_len_mode`, a target ≤ 0 or one without a tokenizer are refused), and
//! the deprecated forms are normalised as evalscope does before anything reads them: the keys given in
//! `--multi-turn-args` are folded into `--dataset-args` (whose own keys win), and `num_workers` in either
//! becomes `--num-workers` (removed from `--dataset-args`) unless that flag was given —
//! `benchmark_args.json` records the result.

use serde_json::{json, Value};

use crate::common::*;
use crate::tokens::tokenizer_dir;

#[test]
fn each_dataset_takes_only_its_own_keys() {
    let sim = fast_sim();
    for (extra, args, says) in [
        (
            "--dataset random",
            r#"{"target_input_len": 8}"#,
            "takes no dataset args",
        ),
        (
            "--dataset openqa",
            r#"{"first_turn_length": 100}"#,
            "unknown key",
        ),
        (
            "--dataset random_multi_turn --multi-turn --max-turns 2",
            r#"{"target_input_len": 8}"#,
            "unknown key",
        ),
        (
            "--dataset openqa",
            r#"{"not_a_real_key": 1}"#,
            "unknown key",
        ),
        (
            "--dataset openqa",
            r#"{"target_input_len": 8, "input_len_mode": "nope"}"#,
            "input_len_mode",
        ),
        (
            "--dataset openqa",
            r#"{"target_input_len": 0}"#,
            "target_input_len",
        ),
    ] {
        let mut run = Run::at(&sim, "/v1/chat/completions")
            .flags(extra)
            .flag("--tokenizer-path", tokenizer_dir("qwen3"))
            .flag("--dataset-args", args);
        if extra.contains("openqa") {
            run = run.input("--dataset-path", "q.jsonl", "{\"question\": \"q\"}\n");
        }
        let err = run.fails(2);
        assert!(err.contains(says), "{extra} {args}: {err}");
        assert_eq!(run.out_entries(), 0);
    }
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--dataset openqa")
        .input("--dataset-path", "q.jsonl", "{\"question\": \"q\"}\n")
        .flag("--dataset-args", r#"{"target_input_len": 128}"#);
    assert!(run.fails(2).contains("--tokenizer-path"));
    assert!(sim.requests().is_empty());
}

/// `(num_workers, dataset_args)` of `benchmark_args.json` after a one-request run with `flags`.
fn recorded(sim: &llmperf::sim::SimServer, flags: &str) -> (Value, Value) {
    let mut run = Run::at(sim, "/v1/chat/completions")
        .flags("--number 1 --max-tokens 2 --no-test-connection")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(flags);
    if flags.contains("openqa") {
        run = run.input("--dataset-path", "q.jsonl", "{\"question\": \"q\"}\n");
    }
    run.ok();
    let args = run.single_run().args();
    (args["num_workers"].clone(), args["dataset_args"].clone())
}

#[test]
fn deprecated_forms_are_folded_and_promoted_as_evalscope_records_them() {
    let sim = fast_sim();
    let multi = "--dataset random_multi_turn --multi-turn --max-turns 1";
    // Expected values: evalscope 1.14.1's benchmark_args.json for the same command lines.
    for (flags, num_workers, dataset_args) in [
        (
            format!(r#"{multi} --multi-turn-args '{{"first_turn_length": 100}}'"#),
            json!(0),
            json!({"first_turn_length": 100}),
        ),
        (
            format!(
                r#"{multi} --dataset-args '{{"first_turn_length": 999}}' --multi-turn-args '{{"first_turn_length": 100}}'"#
            ),
            json!(0),
            json!({"first_turn_length": 999}),
        ),
        (
            format!(r#"{multi} --multi-turn-args '{{"num_workers": 3}}'"#),
            json!(3),
            Value::Null,
        ),
        (
            format!(r#"{multi} --dataset-args '{{"num_workers": 5}}'"#),
            json!(5),
            json!({}),
        ),
        (
            r#"--dataset openqa --dataset-args '{"num_workers": 4, "target_input_len": 100}'"#
                .to_string(),
            json!(4),
            json!({"target_input_len": 100}),
        ),
        (
            r#"--dataset openqa --multi-turn-args '{"num_workers": 3}'"#.to_string(),
            json!(3),
            Value::Null,
        ),
        (
            r#"--dataset openqa --num-workers 0 --multi-turn-args '{"num_workers": 3}'"#
                .to_string(),
            json!(0),
            Value::Null,
        ),
        (multi.to_string(), json!(0), Value::Null),
    ] {
        let got = recorded(&sim, &flags);
        assert_eq!(got, (num_workers, dataset_args), "{flags}");
    }
}
