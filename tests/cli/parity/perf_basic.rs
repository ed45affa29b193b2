//! evalscope's `test_perf_basic.py` (runs against DashScope or a local server that mostly assert that the
//! run completes; the rest of its cases are elsewhere in this suite, see the parity table): the warmup
//! cases it asserts — a fraction of each run's `--number` in a sweep, sent first and left out of
//! `Total Requests`, and a multi-turn run whose warmup counts conversations while `Total Requests` counts
//! the measured turns.

use std::collections::BTreeSet;

use crate::common::*;
use crate::multi_turn::turns;
use crate::tokens::tokenizer_dir;

#[test]
fn a_warmup_fraction_of_each_run_is_sent_first_and_left_out() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt hello --parallel 2 4 --number 5 10 --warmup-num 0.2 --max-tokens 4 --no-test-connection");
    run.ok();
    for (dir, measured) in [("parallel_2_number_5", 5), ("parallel_4_number_10", 10)] {
        let d = run.run_dir(dir);
        assert_eq!(d.summary()["Total Requests"], measured, "{dir}");
        assert_eq!(d.rows().len(), measured as usize, "{dir}");
    }
    // 0.2 × 5 = 1 and 0.2 × 10 = 2 warmup requests on top of the measured ones.
    assert_eq!(sim.requests().len(), 1 + 5 + 2 + 10);
}

#[test]
fn multi_turn_warmup_counts_conversations_and_the_total_counts_turns() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset random_multi_turn --min-turns 1 --max-turns 3")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(
            "--min-prompt-length 8 --max-prompt-length 16 --parallel 2 --number 6 --warmup-num 2",
        )
        .flags("--max-tokens 4 --no-test-connection --seed 5");
    let dir = run.ok_dir("parallel_2_number_6");
    let rows = turns(&dir.db());
    let conversations: BTreeSet<i64> = rows.iter().map(|t| t.0).collect();
    assert_eq!(
        conversations.len(),
        6,
        "the warmup conversations are not stored"
    );
    let total = dir.summary()["Total Requests"].as_u64().unwrap();
    assert!((6..=18).contains(&total), "{total}");
    assert_eq!(total, rows.len() as u64);
    let sent = sim.requests().len() as u64;
    assert!(
        sent > total && sent <= total + 2 * 3,
        "2 warmup conversations were sent too: {sent}"
    );
}

/// `test_completion_endpoint`: `random` prompts of exactly 1024 tokens streamed to `/v1/completions` (plain
/// text: no chat template there), as a sweep.
#[test]
fn random_prompts_to_a_completions_endpoint_as_a_sweep() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/completions")
        .flags("--dataset random --parallel 1 2 --number 2 4 --min-tokens 8 --max-tokens 8 --prefix-length 0")
        .flags(r#"--min-prompt-length 1024 --max-prompt-length 1024 --stream --extra-args '{"ignore_eos": true}'"#)
        .flags("--no-test-connection")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    run.ok();
    let tok = crate::tokens::raw_tokenizer("qwen3");
    let bodies = super::sim_bodies(&sim);
    assert_eq!(bodies.len(), 6);
    for b in &bodies {
        let prompt = b["prompt"].as_str().expect("a text prompt");
        assert_eq!(crate::tokens::count(&tok, prompt), 1024);
        assert_eq!(b["stream"], true);
    }
    for (dir, n) in [("parallel_1_number_2", 2), ("parallel_2_number_4", 4)] {
        assert_eq!(run.run_dir(dir).summary()["Success Requests"], n);
    }
}
