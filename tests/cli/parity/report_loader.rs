//! evalscope's `test_perf_report_loader.py` (PR #1503): every run folder of a sweep gets into the HTML
//! report — also the open-loop runs with no fixed rate (`rate_-1.0_number_N`, which evalscope's loader
//! used to drop, writing no report) — labelled by its rate or concurrency, the sweep charts drawn against
//! the rate for open-loop runs and against the concurrency otherwise. llmperf's report is its own offline
//! page (not evalscope's Plotly one), so the labels are worded differently; the regression is the same.

use serde_json::json;

use crate::common::*;

fn report(run: &Run) -> String {
    std::fs::read_to_string(run.root().join("perf_report.html")).expect("perf_report.html")
}

fn heading(dir: &str) -> String {
    format!("<h3>{dir} <span class=\"note\">(")
}

#[test]
fn every_run_folder_is_in_the_report_with_the_sweep_axis_of_its_mode() {
    let sim = fast_sim();
    // An open-loop run without a fixed rate: a replayed trace.
    let lines: String = (0..3)
        .map(|i| json!({"body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "timestamp": i as f64 * 0.01}).to_string() + "\n")
        .collect();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--open-loop --dataset workload_trace --no-test-connection --name trace")
        .input("--dataset-path", "trace.jsonl", lines);
    run.ok();
    let page = report(&run);
    assert!(
        page.contains(&heading("rate_-1.0_number_1000")),
        "the run is in the report"
    );
    assert!(page.contains("rate (req/s)"));
    // Fixed rates: labelled by the rate, charted against it.
    let run = Run::at(&sim, "/v1/chat/completions").flags(
        "--open-loop --rate 1.5 3 --number 2 2 --prompt hi --max-tokens 2 --no-test-connection",
    );
    run.ok();
    let page = report(&run);
    for (dir, label) in [
        ("rate_1.5_number_2", "rate 1.5 req/s"),
        ("rate_3.0_number_2", "rate 3 req/s"),
    ] {
        assert!(
            page.contains(&format!("{}{label}, 2 requests)", heading(dir))),
            "{dir}"
        );
    }
    assert!(page.contains("rate (req/s)"));
    // A closed-loop sweep: labelled and charted by concurrency.
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--parallel 1 2 --number 2 2 --prompt hi --max-tokens 2 --no-test-connection");
    run.ok();
    let page = report(&run);
    for (dir, label) in [
        ("parallel_1_number_2", "concurrency 1"),
        ("parallel_2_number_2", "concurrency 2"),
    ] {
        assert!(
            page.contains(&format!("{}{label}, 2 requests)", heading(dir))),
            "{dir}"
        );
    }
    assert!(page.contains("against concurrency"));
    assert!(!page.contains("rate (req/s)"));
}
