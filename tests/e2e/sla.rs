//! `--sla-auto-tune` against the real server: a small search (parallel 1…8, a TTFT SLO) completes, and
//! its `sla_summary.json` agrees with the probes' own run summaries and percentiles.

use crate::common::*;
use crate::server::RealServer;

#[test]
fn small_parallel_search_is_consistent_with_its_probes() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let slo_ms = 1500.0;
    let run = server
        .run_at("/chat/completions")
        .flags(r#"--prompt 'Say hello' --max-tokens 4 --extra-args '{"ignore_eos": true}' --parallel 1"#)
        .flags(r#"--sla-auto-tune --sla-upper-bound 8 --sla-num-runs 1 --sla-params '[{"p99_ttft": "<=1500ms"}]'"#);
    run.ok();
    let root = run.root();
    let summary = json_file(&root.join("sla_summary.json"));
    let probes = summary.as_object().unwrap();
    assert!(
        probes.contains_key("parallel_1") && probes.len() >= 2,
        "{probes:?}"
    );
    let mut passing = Vec::new();
    for (key, probe) in probes {
        let value: i64 = key.strip_prefix("parallel_").unwrap().parse().unwrap();
        assert!((1..=8).contains(&value));
        let dir = run.run_dir(&format!("sla_tuning/sla_parallel_{value}_run_0"));
        let own = dir.summary();
        let metrics = &probe["metrics"];
        for (k, v) in own.as_object().unwrap() {
            if let Some(x) = v.as_f64() {
                assert_eq!(metrics[k].as_f64(), Some(x), "{key}: {k}");
            }
        }
        assert_eq!(metrics["Total Requests"].as_u64(), Some(2 * value as u64));
        let pct = dir.percentiles();
        let p99 = pct[9]["TTFT (ms)"].as_f64().unwrap();
        assert_eq!(pct[9]["Percentiles"], "99%");
        assert_eq!(probe["percentiles"]["TTFT (ms)"][9].as_f64(), Some(p99));
        let ok = metrics["Failed Requests"] == 0 && p99 <= slo_ms;
        if ok {
            passing.push(value);
        }
    }
    let log = std::fs::read_to_string(root.join("benchmark.log")).unwrap();
    let best: i64 = log
        .lines()
        .find_map(|l| l.split("Best observed parallel: ").nth(1))
        .map(|n| n.trim().parse().unwrap())
        .expect("a selection");
    assert_eq!(
        Some(best),
        passing.iter().copied().max(),
        "passing probes {passing:?}"
    );
    assert!(root.join("performance_summary.txt").exists());
    assert!(
        !root.join("perf_report.html").exists(),
        "no HTML in SLA mode, as evalscope"
    );
}
