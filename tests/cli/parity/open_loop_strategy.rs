//! evalscope's `test_open_loop_strategy.py` (PR #1501): an open-loop run stops dispatching at its
//! `--duration` deadline, whether the arrivals come from a replayed trace's offsets or from the Poisson
//! schedule (the latter: `dispatch::duration_stops_an_open_loop_run`).

use serde_json::json;

use crate::common::*;

#[test]
fn a_trace_stops_dispatching_at_the_duration_deadline() {
    let sim = fast_sim();
    let lines: String = [0.0, 1.0]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"body": {"model": "m", "messages": [{"role": "user", "content": format!("r{i}")}]}, "timestamp": t})
                .to_string()
                + "\n"
        })
        .collect();
    let dir = Run::at(&sim, "/v1/chat/completions")
        .flags("--open-loop --dataset workload_trace --duration 0.5 --no-test-connection")
        .input("--dataset-path", "trace.jsonl", lines)
        .ok_dir("rate_-1.0_number_1000");
    let rows = dir.rows();
    assert_eq!(
        rows.len(),
        1,
        "the request due after the deadline is not sent"
    );
    assert!(rows[0].request.contains("r0"));
    assert_eq!(sim.requests().len(), 1);
}
