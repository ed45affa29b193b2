//! Golden-text tests: the console tables and the end-of-sweep text report rendered from the JSON files of
//! real `evalscope perf` 1.14.1 runs must equal the text evalscope printed for them.
//!
//! Goldens live in `<shared>/reference/evalscope-golden`, where `<shared>` is `$LLMPERF_SHARED_DIR` or
//! `../shared` next to the crate. The report comparison leaves out only the `Output Path` row (rewritten
//! to a relative path after the fact).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::console::{percentile_table, summary_table, workload_table};
use super::report::{performance_summary, ReportInfo, RunReport};
use crate::metrics::trace::TraceRow;
use crate::metrics::{
    BenchmarkSummary, PercentileTable, TraceSummary, WorkloadRow, WorkloadThroughput,
    PERCENTILE_LABELS, WORKLOAD_METRICS,
};
use crate::text::table::display_width;

fn golden_dir(case: &str) -> PathBuf {
    // llmperf's own goldens (made the same way, for features the shared set lacks) live in the crate.
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/evalscope-golden")
        .join(case);
    if own.is_dir() {
        return own;
    }
    let dir = crate::test_support::golden_root().join(case);
    assert!(
        dir.is_dir(),
        "golden case {} not found; set LLMPERF_SHARED_DIR to the shared/ directory",
        dir.display()
    );
    dir
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// `outputs/<timestamp>/<name>/`.
fn run_root(case: &str) -> PathBuf {
    let outputs = golden_dir(case).join("outputs");
    let stamp = subdirs(&outputs).remove(0);
    subdirs(&stamp).remove(0)
}

/// Python's JSON with bare `NaN` read as NaN.
fn load_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text.replace("NaN", "null")).expect("golden JSON")
}

fn summary_from(v: &Value) -> BenchmarkSummary {
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let u = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    BenchmarkSummary {
        test_duration_s: f("Test Duration (s)"),
        concurrency: v["Concurrency"].as_i64().expect("Concurrency"),
        request_rate: f("Request Rate (req/s)"),
        total_requests: u("Total Requests"),
        success_requests: u("Success Requests"),
        failed_requests: u("Failed Requests"),
        stream_requests: u("Stream Requests"),
        non_stream_requests: u("Non-Stream Requests"),
        req_throughput: f("Req Throughput (req/s)"),
        avg_latency_s: f("Avg Latency (s)"),
        avg_input_tokens: f("Avg Input Tokens"),
        output_throughput: f("Output Throughput (tok/s)"),
        total_throughput: f("Total Throughput (tok/s)"),
        avg_ttft_ms: f("Avg TTFT (ms)"),
        avg_tpot_ms: f("Avg TPOT (ms)"),
        avg_itl_ms: f("Avg ITL (ms)"),
        avg_output_tokens: f("Avg Output Tokens"),
        input_throughput: f("Input Throughput (tok/s)"),
        kv_cache_hit_rate_pct: v.get("KV Cache Hit Rate (%)").and_then(Value::as_f64),
        avg_turns: v.get("Avg Turns/Request").and_then(Value::as_f64),
        avg_first_turn_ttft_ms: v.get("Avg First-Turn TTFT (ms)").and_then(Value::as_f64),
        avg_later_turn_ttft_ms: v
            .get("Avg Subsequent-Turn TTFT (ms)")
            .and_then(Value::as_f64),
        extras: Default::default(),
        ..Default::default()
    }
}

fn percentiles_from(v: &Value) -> PercentileTable {
    let rows = v.as_array().expect("percentile rows");
    assert_eq!(rows.len(), PERCENTILE_LABELS.len());
    let keys: Vec<&String> = rows[0]
        .as_object()
        .expect("row object")
        .keys()
        .filter(|k| *k != "Percentiles")
        .collect();
    let columns = keys
        .into_iter()
        .map(|key| {
            let mut values = [f64::NAN; 11];
            for (i, row) in rows.iter().enumerate() {
                assert_eq!(row["Percentiles"], PERCENTILE_LABELS[i]);
                values[i] = row[key.as_str()].as_f64().unwrap_or(f64::NAN);
            }
            (key.clone(), values)
        })
        .collect();
    PercentileTable { columns }
}

/// The workload throughput file, when the run wrote one.
fn workload_from(path: &Path) -> Option<WorkloadThroughput> {
    if !path.is_file() {
        return None;
    }
    let v = load_json(path);
    let f = |v: &Value, k: &str| v[k].as_f64().expect(k);
    let rows = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| WorkloadRow {
            metric: WORKLOAD_METRICS
                .into_iter()
                .find(|m| r["metric"] == *m)
                .expect("known metric"),
            overall: f(r, "overall"),
            last_window: f(r, "last_window"),
            steady_state: f(r, "steady_state"),
        })
        .collect();
    Some(WorkloadThroughput {
        n_samples: v["n_samples"].as_u64().expect("n_samples"),
        wall_time_s: f(&v, "wall_time_s"),
        last_window_s: f(&v, "last_window_s"),
        warmup_frac: f(&v, "warmup_frac"),
        rows,
    })
}

/// `trace_summary.json`, when the run wrote one.
fn trace_from(path: &Path) -> TraceSummary {
    if !path.is_file() {
        return TraceSummary::default();
    }
    let v = load_json(path);
    let names = [
        "Latency (s)",
        "First-Turn TTFT (s)",
        "TTFAT (s)",
        "Decode TPS",
        "Cache Hit Rate (%)",
        "Eligible Cache Hit Rate (%)",
    ];
    let rows = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| TraceRow {
            metric: names
                .into_iter()
                .find(|m| r["metric"] == *m)
                .expect("known trace metric"),
            stats: ["mean", "min", "p50", "p90", "p95", "p99", "max"]
                .map(|k| r[k].as_f64().expect(k)),
        })
        .collect();
    TraceSummary {
        n_traces: v["n_traces"].as_u64().expect("n_traces") as usize,
        rows,
    }
}

/// The case's runs, in the order evalscope ran them.
fn runs(case: &str) -> Vec<RunReport> {
    subdirs(&run_root(case))
        .into_iter()
        .filter(|d| d.join("benchmark_summary.json").is_file())
        .map(|d| {
            let summary = summary_from(&load_json(&d.join("benchmark_summary.json")));
            let percentiles = percentiles_from(&load_json(&d.join("benchmark_percentile.json")));
            let (concurrency, rate) = RunReport::load_of(&summary);
            RunReport {
                concurrency,
                rate,
                number: summary.total_requests,
                summary,
                percentiles,
                workload: workload_from(&d.join("workload_throughput.json")),
                trace: trace_from(&d.join("trace_summary.json")),
            }
        })
        .collect()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every line equal to `header` in the case's console text with the table below it (up to its `└` line).
fn console_blocks(case: &str, header: &str) -> Vec<String> {
    console_blocks_where(case, |line| line == header)
}

/// Every line that `is_header` picks in the case's console text with the table below it.
fn console_blocks_where(case: &str, is_header: impl Fn(&str) -> bool) -> Vec<String> {
    let text =
        strip_ansi(&fs::read_to_string(golden_dir(case).join("console.txt")).expect("console"));
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if is_header(line) {
            let end = (i..lines.len())
                .find(|&j| lines[j].starts_with('└'))
                .expect("table end");
            blocks.push(lines[i..=end].join("\n"));
        }
    }
    blocks
}

fn check_console(case: &str) {
    let runs = runs(case);
    assert!(!runs.is_empty(), "{case}: no runs");
    let summaries = console_blocks(case, "Benchmarking summary:");
    let percentiles = console_blocks(case, "Percentile results:");
    assert_eq!(summaries.len(), runs.len(), "{case}: summary tables");
    assert_eq!(percentiles.len(), runs.len(), "{case}: percentile tables");
    let workloads = console_blocks_where(case, |l| l.starts_with("Workload throughput ("));
    let ours: Vec<String> = runs
        .iter()
        .filter_map(|r| r.workload.as_ref().map(workload_table))
        .collect();
    assert!(!ours.is_empty(), "{case}: workload files");
    assert_eq!(ours, workloads, "{case}: workload tables");
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(summary_table(&run.summary), summaries[i], "{case} run {i}");
        assert_eq!(
            percentile_table(&run.percentiles),
            percentiles[i],
            "{case} run {i}"
        );
    }
}

fn info(case: &str, model: &str, dataset: &str, api: &str, input_only: bool) -> ReportInfo {
    ReportInfo {
        model: model.into(),
        dataset: dataset.into(),
        api: api.into(),
        alias: None,
        endpoint: "127.0.0.1:8801".into(),
        output_path: format!("/tmp/outputs/20261129_000000/{case}"),
        input_only,
    }
}

fn check_report(case: &str, info: &ReportInfo) {
    let golden =
        fs::read_to_string(run_root(case).join("performance_summary.txt")).expect("golden");
    let expected: Vec<&str> = golden.lines().collect();
    let runs = runs(case);
    assert_eq!(
        golden.contains("Workload Throughput"),
        !info.input_only,
        "{case}: LLM reports carry the workload section"
    );
    let ours = performance_summary(info, &runs);
    assert!(
        ours.ends_with("┘\n"),
        "{case}: ends with the last table and a newline"
    );
    let ours: Vec<&str> = ours.lines().collect();
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        if b.starts_with("│ Output Path") {
            assert!(
                a.starts_with("│ Output Path           │ /tmp/outputs/"),
                "{a}"
            );
            assert_eq!(display_width(a), 80, "{case}: Output Path row width");
            continue;
        }
        assert_eq!(a, b, "{case}: line {}", i + 1);
    }
    assert_eq!(ours.len(), expected.len(), "{case}: line count");
}

#[test]
fn console_tables_match_goldens() {
    for case in [
        "a_seed",
        "b_sweep",
        "c_openloop",
        "d_nostream",
        "e_line_by_line",
        "f_embedding",
        "g_errors",
    ] {
        check_console(case);
    }
}

#[test]
fn reports_match_goldens() {
    let llm = |case: &str, dataset: &str| info(case, "mock-model", dataset, "openai", false);
    for case in ["a_seed", "b_sweep", "c_openloop", "d_nostream", "g_errors"] {
        check_report(case, &llm(case, "random"));
    }
    check_report("e_line_by_line", &llm("e_line_by_line", "line_by_line"));
    let embed = info(
        "f_embedding",
        "mock-embed",
        "random_embedding",
        "openai_embedding",
        true,
    );
    check_report("f_embedding", &embed);
}

#[test]
fn multi_turn_console_tables_and_reports_match_goldens() {
    for (case, dataset) in [
        ("h_multi_turn_random", "random_multi_turn"),
        ("i_multi_turn_sharegpt", "share_gpt_en_multi_turn"),
    ] {
        check_console(case);
        let mut info = info(case, "mock-model", dataset, "openai", false);
        let golden = fs::read_to_string(run_root(case).join("performance_summary.txt")).unwrap();
        let endpoint = golden
            .lines()
            .find_map(|l| l.strip_prefix("│ Endpoint              │ "))
            .expect("endpoint row");
        info.endpoint = endpoint.trim_end_matches([' ', '│']).to_string();
        check_report(case, &info);
    }
    let case = "j_workload_trace";
    check_console(case);
    let mut info = info(case, "workload_trace", "workload_trace", "openai", false);
    let golden = fs::read_to_string(run_root(case).join("performance_summary.txt")).unwrap();
    let endpoint = golden
        .lines()
        .find_map(|l| l.strip_prefix("│ Endpoint              │ "))
        .expect("endpoint row");
    info.endpoint = endpoint.trim_end_matches([' ', '│']).to_string();
    check_report(case, &info);
}
