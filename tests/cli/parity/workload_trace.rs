//! evalscope's `test_workload_trace.py` and `test_workload_trace_e2e.py` (PR #1494) through the CLI: the
//! trace's bodies reach the server as recorded (no `--model` rewrite, no metadata key leaked), at their
//! recorded offsets (scaled by `speed`), with their own headers except hop-by-hop ones, their
//! `request_id` stored; no `--rate` is needed; `--warmup-num` marks the trace's first records warmup, sent
//! on the trace's own schedule and left out of the results. The per-record parsing and rewriting cases are
//! unit tests (`traces::workload_trace::tests`).

use llmperf::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

use super::sim_bodies;
use crate::common::*;

fn sim() -> SimServer {
    SimServer::start(SimConfig {
        record_truth: true,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// A trace of `n` chat records `step_s` apart.
fn trace(n: usize, step_s: f64) -> String {
    (0..n)
        .map(|i| {
            json!({"body": {"model": "qwen-72b", "messages": [{"role": "user", "content": format!("hi {i}")}],
                            "temperature": 0.9, "max_tokens": 3, "top_p": 0.95, "seed": 42},
                   "timestamp": 100.0 + i as f64 * step_s})
            .to_string()
                + "\n"
        })
        .collect()
}

fn run(sim: &SimServer, lines: &str, flags: &str) -> Run {
    Run::at(sim, "/v1/chat/completions")
        .flags("--open-loop --dataset workload_trace --no-test-connection")
        .input("--dataset-path", "trace.jsonl", lines)
        .flags(flags)
}

#[test]
fn bodies_arrive_verbatim_with_their_headers_ids_and_no_rate() {
    let sim = sim();
    let lines = [
        json!({"body": {"model": "qwen-72b", "messages": [{"role": "user", "content": "a"}], "temperature": 0.9, "max_tokens": 3},
               "timestamp": 0.0, "request_id": "req-abc-123",
               "headers": {"X-Canary": "true", "X-Custom": "keep", "Host": "evil.com", "Connection": "close", "Transfer-Encoding": "chunked"}}),
        json!({"body": {"model": "qwen-72b", "messages": [{"role": "user", "content": "b"}]}, "timestamp": 0.1}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    // --model does not rewrite the bodies; no --rate. --no-request-id: evalscope sends no id of its own.
    let dir = run(&sim, &lines, "--no-request-id").ok_dir("rate_-1.0_number_1000");
    let bodies = sim_bodies(&sim);
    assert_eq!(bodies.len(), 2, "the record count, not --number's default");
    assert_eq!(bodies[0]["model"], "qwen-72b");
    assert_eq!(
        (
            bodies[0]["temperature"].clone(),
            bodies[0]["max_tokens"].clone()
        ),
        (json!(0.9), json!(3))
    );
    for b in &bodies {
        assert!(
            b.as_object()
                .unwrap()
                .keys()
                .all(|k| !k.starts_with("__evalscope")),
            "{b}"
        );
    }
    let headers = &sim.requests()[0].2;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        (header("x-canary"), header("x-custom")),
        (Some("true"), Some("keep"))
    );
    assert_ne!(
        header("host"),
        Some("evil.com"),
        "hop-by-hop and framing headers are not forwarded"
    );
    assert_ne!(header("transfer-encoding"), Some("chunked"));
    let summary = dir.summary();
    assert_eq!(summary["Total Requests"], 2);
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let ids: Vec<Option<String>> = conn
        .prepare("SELECT request_id FROM result ORDER BY scheduled_time")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids, [Some("req-abc-123".to_string()), None]);
    // An explicit --rate is accepted too (the trace's own offsets still apply).
    let sim = self::sim();
    run(&sim, &trace(1, 0.1), "--rate 5").ok_dir("rate_5.0_number_1000");
    assert_eq!(sim_bodies(&sim).len(), 1);
}

#[test]
fn arrivals_follow_the_trace_and_its_speed() {
    let sim = sim();
    let dir = run(&sim, &trace(3, 0.3), "").ok_dir("rate_-1.0_number_1000");
    let sched: Vec<f64> = dir
        .rows()
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .collect();
    let offsets: Vec<f64> = sched.iter().map(|t| t - sched[0]).collect();
    for (got, want) in offsets.iter().zip([0.0, 0.3, 0.6]) {
        assert!((got - want).abs() < 1e-6, "{offsets:?}");
    }
    // The server saw them no earlier than their offsets (the first may be late by a little).
    let received: Vec<f64> = sim.truth().iter().map(|t| t.received_s).collect();
    for (i, r) in received.iter().enumerate() {
        assert!(r - received[0] >= 0.3 * i as f64 - 0.1, "{received:?}");
    }
    // speed 2 halves the gaps.
    let sim = self::sim();
    let dir = run(&sim, &trace(2, 0.6), r#"--dataset-args '{"speed": 2}'"#)
        .ok_dir("rate_-1.0_number_1000");
    let rows = dir.rows();
    let gap = rows[1].scheduled_time.unwrap() - rows[0].scheduled_time.unwrap();
    assert!((gap - 0.3).abs() < 1e-6, "{gap}");
}

#[test]
fn warmup_is_the_first_records_on_the_same_schedule_and_left_out() {
    let sim = sim();
    let dir = run(&sim, &trace(4, 0.3), "--warmup-num 2").ok_dir("rate_-1.0_number_1000");
    // Every record is sent, the warmup ones on the trace's schedule (not all at once first).
    let received: Vec<f64> = sim.truth().iter().map(|t| t.received_s).collect();
    assert_eq!(received.len(), 4);
    for (i, r) in received.iter().enumerate() {
        assert!(r - received[0] >= 0.3 * i as f64 - 0.1, "{received:?}");
    }
    let rows = dir.rows();
    assert_eq!(rows.len(), 2, "the warmup records are not stored");
    let contents: Vec<String> = rows
        .iter()
        .map(|r| {
            serde_json::from_str::<Value>(&r.request).unwrap()["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(contents, ["hi 2", "hi 3"]);
    assert_eq!(dir.summary()["Total Requests"], 2);
    // evalscope records warmup_num 0: the trace took it over.
    assert_eq!(dir.args()["warmup_num"], 0);
    // A fraction counts the trace's records; more warmup than records leaves nothing measured.
    let sim = self::sim();
    let dir = run(&sim, &trace(10, 0.01), "--warmup-num 0.2").ok_dir("rate_-1.0_number_1000");
    assert_eq!((sim.truth().len(), dir.rows().len()), (10, 8));
    let sim = self::sim();
    let dir = run(&sim, &trace(5, 0.01), "--warmup-num 100").ok_dir("rate_-1.0_number_1000");
    assert_eq!((sim.truth().len(), dir.rows().len()), (5, 0));
}

#[test]
fn a_trace_needs_the_open_loop_and_a_path() {
    let sim = sim();
    let err = Run::at(&sim, "/v1/chat/completions")
        .flags("--dataset workload_trace")
        .input("--dataset-path", "trace.jsonl", trace(1, 0.1))
        .fails(2);
    assert!(err.contains("open-loop"), "{err}");
    let err = Run::at(&sim, "/v1/chat/completions")
        .flags("--open-loop --dataset workload_trace")
        .fails(2);
    assert!(err.contains("--dataset-path"), "{err}");
    assert!(sim.truth().is_empty());
}
