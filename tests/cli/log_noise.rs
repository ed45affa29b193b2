//! What documented usage logs: no WARN for what the README recommends, one level label per line, advice
//! that fits the process (a shard's own slots), a first progress rate measured from a real send, and usage
//! errors whose first line says what to do (an ambiguous prefix, a misspelt `--api`).

use crate::common::*;

#[test]
fn a_base_url_is_completed_with_an_info_line_not_a_warning() {
    let sim = fast_sim();
    let run = Run::with_url(&format!("{}/v1", sim.base_url())).flags("--prompt x --number 1");
    let out = run.output();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "- INFO: --url {}/v1 names no endpoint",
            sim.base_url()
        )),
        "{err}"
    );
    assert!(!err.contains("WARN: --url"), "{err}");
}

#[test]
fn warmup_advice_counts_this_shards_slots() {
    // --parallel 2 split over 2 shards: one slot each, so there is no burst to warn about.
    let shard = Run::new().flags(
        "--api mock --model m --prompt x --parallel 2 --number 4 --shard 0/2 --mock-ttft-ms 0",
    );
    let err = stderr(&shard.output());
    assert!(!err.contains("Warmup is disabled"), "{err}");
    let whole = Run::new()
        .flags("--api mock --model m --prompt x --parallel 2 --number 4 --mock-ttft-ms 0");
    let err = stderr(&whole.output());
    assert!(err.contains("Pass --warmup-num 2"), "{err}");
}

#[test]
fn the_first_progress_rate_is_measured_from_the_first_send() {
    // 2 requests of at least 50 ms each, one at a time: no honest rate is above 20 req/s.
    let run = Run::new().flags(
        "--api mock --model m --prompt x --number 2 --max-tokens 1 --mock-ttft-ms 50 --mock-itl-ms 0",
    );
    let err = stderr(&run.output());
    let first = err
        .lines()
        .find(|l| l.contains("Processing[parallel_1_number_2]"))
        .expect("a progress line");
    let rate: f64 = first
        .rsplit(", ")
        .next()
        .and_then(|r| r.strip_suffix("it/s]"))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("a rate in {first}"));
    assert!(rate <= 21.0, "{first}");
}

#[test]
fn an_ambiguous_prefix_says_so_and_lists_the_flags() {
    let run = Run::new().flags("--model m --prompt x --max 4");
    let err = run.fails(2);
    assert_eq!(
        err.lines().next().unwrap(),
        "error: --max is ambiguous: it could be --max-prompt-length, --max-tokens, --max-turns (write more of the flag)"
    );
    assert_eq!(run.out_entries(), 0);
}

#[test]
fn a_misspelt_api_gets_its_suggestion_on_the_first_line() {
    let err = Run::new().flags("--model m --api opena").fails(2);
    let first = err.lines().next().unwrap();
    assert!(first.contains("did you mean `--api openai`?"), "{err}");
    assert!(
        first.len() < 100,
        "the list and the hint come after: {first}"
    );
}
