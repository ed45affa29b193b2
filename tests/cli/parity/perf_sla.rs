//! evalscope's `test_perf_sla.py` (runs against a local server that assert that they complete): SLA
//! auto-tune over the concurrency with a latency constraint (`p99_latency <= 8`, met everywhere here, so
//! the best is the upper bound) and with the throughput objective (`tps: max`, whose best is the probe with
//! the highest output throughput). The searches' decisions are checked against evalscope's in
//! `sla::golden_tests`; the knees against the simulator's capacity model in `tests/cli/sla.rs`.

use crate::common::*;

fn auto_tune(params: &str) -> (String, serde_json::Value) {
    let run = Run::new()
        .flags(r#"--api mock --model m --prompt 'hello world' --extra-args '{"ignore_eos": true}' --no-timestamp"#)
        .flags("--sla-auto-tune --sla-variable parallel --sla-num-runs 1 --sla-upper-bound 8 --max-tokens 8")
        .flags("--mock-ttft-ms 5 --mock-itl-ms 2 --mock-decode-tok-per-s 2000")
        .flag("--sla-params", params);
    run.ok();
    let log = std::fs::read_to_string(run.root().join("benchmark.log")).unwrap();
    (log, json_file(&run.root().join("sla_summary.json")))
}

/// The number after `Best observed <what>: ` in the log's summary table.
fn best(log: &str, what: &str) -> f64 {
    let tail = log
        .split(&format!("Best observed {what}: "))
        .nth(1)
        .unwrap_or_else(|| panic!("no best {what}: {log}"));
    tail.split([' ', '│', '\n'])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_latency_constraint_and_the_throughput_objective() {
    let (log, _) = auto_tune(r#"[{"p99_latency": "<=8"}]"#);
    assert_eq!(best(&log, "parallel"), 8.0);
    let (log, summary) = auto_tune(r#"[{"tps": "max"}]"#);
    let tps: Vec<f64> = summary
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("parallel_"))
        .map(|(_, v)| v["metrics"]["Output Throughput (tok/s)"].as_f64().unwrap())
        .collect();
    assert!(tps.len() >= 3, "{summary}");
    let highest = tps.iter().cloned().fold(f64::MIN, f64::max);
    assert!((best(&log, "tps") - highest).abs() < 0.01, "{tps:?}");
}
