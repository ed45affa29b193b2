//! evalscope's `test_target_input_len.py` (PR #1483): `target_input_len` fits real prompts to a token
//! length: longer prompts are cut to it (`cap` and `drop`), shorter ones kept (`cap`) or dropped (`drop`);
//! without it the min/max length filter applies and prompts are sent unchanged.

use super::sim_bodies;
use crate::common::*;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

/// The prompts sent for the lines `ten_words` (10 tokens) and `abc` (1 token) with `dataset_args`.
fn prompts(dataset_args: Option<&str>) -> Vec<String> {
    let sim = fast_sim();
    let mut run = Run::at(&sim, "/v1/completions")
        .flags("--dataset line_by_line --number 2 --no-test-connection")
        .input(
            "--dataset-path",
            "lines.txt",
            format!("{}\nabc\n", ten_words()),
        )
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    if let Some(args) = dataset_args {
        run = run.flag("--dataset-args", args);
    }
    run.ok();
    sim_bodies(&sim)
        .iter()
        .map(|b| b["prompt"].as_str().unwrap().to_string())
        .collect()
}

fn ten_words() -> String {
    ["word"; 10].join(" ")
}

#[test]
fn cap_cuts_and_keeps_drop_keeps_only_the_exact_length_and_none_filters() {
    let tok = raw_tokenizer("qwen3");
    assert_eq!(count(&tok, &ten_words()), 10);
    let five = ["word"; 5].join(" ");
    assert_eq!(
        prompts(Some(r#"{"target_input_len": 5, "input_len_mode": "cap"}"#)),
        [five.as_str(), "abc"]
    );
    // `drop`: only the cut prompt is left, so both requests send it.
    assert_eq!(
        prompts(Some(r#"{"target_input_len": 5, "input_len_mode": "drop"}"#)),
        [five.as_str(), five.as_str()]
    );
    assert_eq!(prompts(None), [ten_words().as_str(), "abc"]);
}
