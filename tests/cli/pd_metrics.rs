//! `--enable-pd-metrics`: evalscope's PD handoff keys and percentile columns, computed from the stored ITLs.

use crate::common::*;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn pd_metrics_follow_the_stored_inter_token_latencies() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags(r#"--prompt hi --number 4 --parallel 2 --max-tokens 6 --extra-args '{"ignore_eos": true}' --enable-pd-metrics"#);
    let output = run.output();
    ok(&output);
    let run = run.run_dir("parallel_2_number_4");
    let rows = run.rows();
    let (mut handoff, mut overhead, mut steady) = (vec![], vec![], vec![]);
    for r in &rows {
        assert_eq!(r.itl.len(), 5);
        handoff.push(r.itl[0]);
        overhead.push((r.itl[0] - median(&r.itl[1..])).max(0.0));
        steady.extend_from_slice(&r.itl[1..]);
    }
    let avg_ms = |v: &[f64]| py_round(v.iter().sum::<f64>() / v.len() as f64 * 1000.0, 2);
    let text = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
    let s: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        s["Avg PD Handoff Latency (ms)"].as_f64().unwrap(),
        avg_ms(&handoff)
    );
    assert_eq!(
        s["Avg PD Handoff Overhead (ms)"].as_f64().unwrap(),
        avg_ms(&overhead)
    );
    let steady_ms = s["Avg Steady ITL (ms)"].as_f64().unwrap();
    assert!(
        (steady_ms - avg_ms(&steady)).abs() <= 0.01,
        "{steady_ms} vs {}",
        avg_ms(&steady)
    );
    // evalscope's key order: after Avg ITL, before Avg Output Tokens.
    let at = |k: &str| text.find(k).unwrap();
    assert!(at("Avg ITL (ms)") < at("Avg Steady ITL (ms)"));
    assert!(at("Avg PD Handoff Overhead (ms)") < at("Avg Output Tokens"));
    assert_eq!(run.args()["enable_pd_metrics"], true);
    let p = run.percentiles();
    let keys: Vec<&String> = p[0].as_object().unwrap().keys().collect();
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(pos("Steady ITL (ms)"), pos("ITL (ms)") + 1);
    assert_eq!(pos("PD Handoff Overhead (ms)"), pos("ITL (ms)") + 3);
    let console = stderr(&output);
    assert!(
        console.contains("│ Avg PD Handoff Latency (ms)"),
        "{console}"
    );
    assert!(console.contains("PD Handoff Overhead (ms)"));
}

#[test]
fn without_the_flag_no_pd_keys() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt hi --number 2")
        .ok_dir("parallel_1_number_2");
    let text = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
    assert!(!text.contains("PD Handoff") && !text.contains("Steady ITL"));
}
