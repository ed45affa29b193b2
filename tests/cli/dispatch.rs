//! When requests are sent: `--duration` in closed and open loop, and Poisson pacing (`--rate`) in closed
//! loop, read back from the stored intended send times. Counts and generous bounds only.

use crate::common::*;

/// A run against a fast simulator with `extra`: its stored rows (from the one run folder) and stderr.
fn run(extra: &[&str]) -> (Vec<Row>, String) {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --max-tokens 2")
        .args(extra);
    let o = run.output();
    ok(&o);
    (run.single_run().rows(), stderr(&o))
}

#[test]
fn duration_stops_a_closed_loop_run() {
    let (rows, stderr) = run(&["--parallel", "2", "--number", "100000", "--duration", "0.4"]);
    assert!(!rows.is_empty() && rows.len() < 100_000, "{}", rows.len());
    assert!(stderr.contains("--duration reached"), "{stderr}");
    let first = rows
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .fold(f64::MAX, f64::min);
    let last = rows
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .fold(f64::MIN, f64::max);
    assert!(
        last - first < 0.4,
        "nothing is scheduled after the deadline"
    );
}

#[test]
fn duration_stops_an_open_loop_run() {
    let (rows, stderr) = run(&[
        "--open-loop",
        "--rate",
        "100",
        "--number",
        "1000",
        "--duration",
        "0.3",
    ]);
    assert!((5..200).contains(&rows.len()), "{}", rows.len());
    assert!(stderr.contains("--duration reached"), "{stderr}");
}

#[test]
fn closed_loop_pacing_spreads_sends_over_n_over_rate() {
    let (rows, _) = run(&[
        "--parallel",
        "4",
        "--rate",
        "40",
        "--number",
        "20",
        "--seed",
        "3",
    ]);
    assert_eq!(rows.len(), 20);
    let mut scheduled: Vec<f64> = rows.iter().map(|r| r.scheduled_time.unwrap()).collect();
    scheduled.sort_by(f64::total_cmp);
    // The last arrival is at 20 / 40 = 0.5 s after the start; the first waits one exponential gap.
    let span = scheduled[19] - scheduled[0];
    assert!((0.2..5.0).contains(&span), "span {span} s");
    for r in &rows {
        assert!(r.send_time.unwrap() >= r.scheduled_time.unwrap());
    }
}
