//! The load verdict's rule of each mode (docs/load-verdict.md, "Rules per mode") through the CLI: the rule
//! text and the verdict, recounted from the stored rows where a number is judged. Closed loop, open loop,
//! `--ramp-up` and `--number` ≤ `--parallel` are in `load_verdict.rs`; merged shards in `shards.rs`;
//! AgentX in `agentx.rs`.

use crate::common::*;
use serde_json::{json, Value};

/// Time-weighted mean of the spans in flight over [first send, last send] (independently of the code
/// under test).
fn mean_in_flight(spans: &[(f64, f64)], first: f64, last: f64) -> f64 {
    let area: f64 = spans
        .iter()
        .map(|(s, e)| (e.min(last) - s.max(first)).max(0.0))
        .sum();
    area / (last - first)
}

/// Every stored request's `(start_time, completed_time, conversation_id)`.
fn spans(dir: &RunDir) -> Vec<(f64, f64, Option<i64>)> {
    let db = rusqlite::Connection::open(dir.db()).unwrap();
    let mut stmt = db
        .prepare("SELECT start_time, completed_time, conversation_id FROM result")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

fn num(s: &Value, key: &str) -> f64 {
    s[key].as_f64().unwrap_or_else(|| panic!("{key}: {s}"))
}

fn rule(s: &Value) -> &str {
    s["Load Rule"].as_str().unwrap_or_else(|| panic!("{s}"))
}

#[test]
fn multi_turn_think_time_is_not_under_delivery() {
    let sim = timed_sim(50, 1);
    // Four conversations of two turns, 0.4 s of think time between them, two at a time: requests are in
    // flight a fifth of the time, conversations all of it.
    let line = json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "x"},
                      {"role": "user", "content": "two"}])
    .to_string();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset custom_multi_turn")
        .input("--dataset-path", "convs.jsonl", format!("{line}\n").repeat(4))
        .flags(r#"--max-turns 2 --parallel 2 --number 4 --max-tokens 2 --dataset-args '{"think_time_s": 0.4}'"#);
    let dir = run.ok_dir("parallel_2_number_4");
    let s = dir.summary();
    let rows = spans(&dir);
    assert_eq!(rows.len(), 8);
    let first = rows.iter().map(|r| r.0).fold(f64::MAX, f64::min);
    let last = rows.iter().map(|r| r.0).fold(f64::MIN, f64::max);
    let mut conversations: std::collections::BTreeMap<i64, (f64, f64)> = Default::default();
    for &(start, end, id) in &rows {
        let c = conversations.entry(id.unwrap()).or_insert((start, end));
        *c = (c.0.min(start), c.1.max(end));
    }
    let by_conversation: Vec<(f64, f64)> = conversations.into_values().collect();
    let by_request: Vec<(f64, f64)> = rows.iter().map(|r| (r.0, r.1)).collect();
    let delivered = mean_in_flight(&by_conversation, first, last);
    assert!(
        (num(&s, "Delivered Concurrency") - delivered).abs() < 1e-3,
        "{s}"
    );
    assert!(
        mean_in_flight(&by_request, first, last) < 1.5,
        "counted by request, think time would look like under-delivery"
    );
    assert_eq!(
        rule(&s),
        "closed loop: Delivered Concurrency (conversations in flight) ≥ 95% of --parallel 2"
    );
    assert_eq!(s["Load As Configured"], true, "{s}");
}

#[test]
fn a_duration_closed_loop_is_judged_over_its_send_window() {
    let sim = timed_sim(100, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 4 --number 1000 --duration 1 --max-tokens 2");
    let dir = run.ok_dir("parallel_4_number_1000");
    let s = dir.summary();
    let rows = spans(&dir);
    assert!(rows.len() < 1000, "--duration ended the run early");
    let first = rows.iter().map(|r| r.0).fold(f64::MAX, f64::min);
    let last = rows.iter().map(|r| r.0).fold(f64::MIN, f64::max);
    let by_request: Vec<(f64, f64)> = rows.iter().map(|r| (r.0, r.1)).collect();
    let delivered = mean_in_flight(&by_request, first, last);
    assert!(
        (num(&s, "Delivered Concurrency") - delivered).abs() < 1e-3,
        "{s}"
    );
    assert_eq!(
        rule(&s),
        "closed loop: Delivered Concurrency ≥ 95% of --parallel 4"
    );
    assert_eq!(s["Load As Configured"], delivered >= 3.8, "{s}");
    assert!(delivered >= 3.8, "the 4 slots stayed busy: {delivered}");
}

#[test]
fn a_replayed_trace_is_judged_against_its_own_arrival_times() {
    let sim = fast_sim();
    let trace: String = (0..6)
        .map(|i| {
            let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1});
            format!("{}\n", json!({"body": body, "timestamp": 100.0 + 0.1 * i as f64}))
        })
        .collect();
    let run = Run::new()
        .flag("--url", format!("{}/v1/chat/completions", sim.base_url()))
        .flags("--open-loop --dataset workload_trace")
        .input("--dataset-path", "trace.jsonl", trace)
        .flags("--name trace");
    let s = run.ok_dir("rate_-1.0_number_1000").summary();
    assert_eq!(
        rule(&s),
        "trace replay: sends keep the trace's arrival times (achieved rate ≥ 95% of the schedule's)"
    );
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert!(
        s["Load Reached After (s)"].is_null(),
        "no configured level: {s}"
    );
    assert!(s.get("Rate Error (%)").is_none(), "no --rate");
}

#[test]
fn each_sla_probe_has_its_own_verdict() {
    let run = Run::new()
        .flags(r#"--api mock --model m --prompt hello --no-timestamp --max-tokens 2 --mock-ttft-ms 20"#)
        .flags(r#"--sla-auto-tune --sla-num-runs 1 --sla-upper-bound 2 --sla-params '[{"p99_ttft": "<=2000ms"}]'"#);
    run.ok();
    let probes = run.root().join("sla_tuning");
    let mut judged = 0;
    for entry in std::fs::read_dir(&probes).unwrap() {
        let dir = entry.unwrap().path();
        let s = json_file(&dir.join("benchmark_summary.json"));
        let parallel = s["Concurrency"].as_f64().unwrap() as u64;
        let number = s["Total Requests"].as_u64().unwrap();
        let expected = if number <= parallel {
            format!(
                "closed loop with --number {number} ≤ --parallel {parallel}: all {number} requests in \
                 flight at once"
            )
        } else {
            format!("closed loop: Delivered Concurrency ≥ 95% of --parallel {parallel}")
        };
        assert_eq!(rule(&s), expected, "{}", dir.display());
        assert!(s["Load As Configured"].is_boolean(), "{s}");
        judged += 1;
    }
    assert!(judged >= 2, "one verdict per probe run");
}
