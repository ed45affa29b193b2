//! Golden recomputation: every real evalscope 1.14.1 run that kept its database is fed row by
//! row through the accumulator, and the produced summary file / the percentile file
//! text must equal evalscope's files byte for byte.
//!
//! The goldens live in `<shared>/reference/evalscope-golden`, where `<shared>` is `$LLMPERF_SHARED_DIR` or
//! else `$CARGO_MANIFEST_DIR/../shared`.

mod trace;
mod workload;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::samples::Sample;
use super::{Accumulator, SummaryContext};

use crate::test_support::golden_root;

/// Every run directory under `dir` that holds a database, sorted.
fn run_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    run_dirs_holding(dir, "benchmark_data.db", out);
}

/// Every run directory under `dir` that holds `file` and a non-empty database, sorted (a
/// golden copy may hold an empty placeholder, or nothing, where a large DB was left out).
fn run_dirs_holding(dir: &Path, file: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable golden dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            run_dirs_holding(&path, file, out);
        } else if path.file_name().is_some_and(|n| n == file)
            && std::fs::metadata(dir.join("benchmark_data.db")).is_ok_and(|m| m.len() > 0)
        {
            out.push(dir.to_path_buf());
        }
    }
}

/// The run's context, from its arguments (`parallel` is −1 in open loop).
fn context(run: &Path) -> SummaryContext {
    let text =
        std::fs::read_to_string(run.join("benchmark_args.json")).expect("benchmark_args.json");
    let args: serde_json::Value = serde_json::from_str(&text).expect("args JSON");
    let api = args["api"].as_str().expect("api").to_lowercase();
    SummaryContext {
        concurrency_as_written: args["parallel"].as_i64().expect("parallel"),
        rate_as_written: args["rate"].as_f64().expect("rate"),
        input_only: api.contains("embed") || api.contains("rerank"),
        pd_metrics: args["enable_pd_metrics"].as_bool().unwrap_or(false),
    }
}

/// The `inter_token_latencies` JSON list, parsed with Rust's correctly rounded float parser.
fn parse_itl(text: &str) -> Vec<f64> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("ITL float"))
        .collect()
}

/// Feeds every stored row, in insertion order, into a fresh accumulator. Failed rows are labelled
/// `http_status` (the goldens' only failure kind).
fn replay(run: &Path) -> Accumulator {
    replay_spilling(run, super::spill::DEFAULT_SPILL_VALUES)
}

/// The run's the run's database, read-only.
fn golden_db(run: &Path) -> Connection {
    Connection::open_with_flags(
        run.join("benchmark_data.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open golden DB")
}

/// [`replay`] with at most `cap` values per percentile column in memory (the rest spilled to disk).
fn replay_spilling(run: &Path, cap: usize) -> Accumulator {
    let con = golden_db(run);
    let mut stmt = con
        .prepare(
            "SELECT start_time, completed_time, success, is_stream, latency, first_chunk_latency, \
             prompt_tokens, completion_tokens, time_per_output_token, inter_token_latencies \
             FROM result ORDER BY rowid",
        )
        .expect("query");
    let mut acc = Accumulator::with_spill(context(run), None, cap);
    let mut rows = stmt.query([]).expect("rows");
    while let Some(row) = rows.next().expect("row") {
        let success: i64 = row.get(2).unwrap();
        let opt_f = |i: usize| row.get::<_, Option<f64>>(i).unwrap().unwrap_or(0.0);
        let opt_u = |i: usize| row.get::<_, Option<i64>>(i).unwrap().unwrap_or(0) as u64;
        let sample = Sample {
            start_time: row.get(0).unwrap(),
            completed_time: row.get(1).unwrap(),
            success: success == 1,
            is_stream: row.get::<_, i64>(3).unwrap() == 1,
            latency: opt_f(4),
            ttft: opt_f(5),
            prompt_tokens: opt_u(6),
            completion_tokens: opt_u(7),
            tpot: opt_f(8),
            failure: (success != 1).then_some("http_status"),
            ..Sample::default()
        };
        let itl: String = row.get(9).unwrap();
        acc.add_sample(&sample, parse_itl(&itl));
    }
    acc
}

/// Asserts `got == want`, naming the first differing line.
fn assert_same_text(what: &str, got: &str, want: &str) {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{what}: line {} differs", i + 1);
    }
    assert_eq!(got, want, "{what}: texts differ (length or line ends)");
}

#[test]
fn golden_runs_are_reproduced_byte_for_byte() {
    let mut runs = Vec::new();
    run_dirs(&golden_root(), &mut runs);
    let names: Vec<String> = runs
        .iter()
        .map(|r| r.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        runs.len() >= 8,
        "expected the 8 golden runs with a DB, found {names:?}"
    );
    for run in &runs {
        let what = run.display().to_string();
        let acc = replay(run);
        let mut summary = acc.summary();
        // llmperf's extras come after evalscope's keys; evalscope's files have none.
        let extras = std::mem::take(&mut summary.extras);
        let want_summary = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
        assert_same_text(
            &format!("{what} summary"),
            &summary.to_json_string(),
            &want_summary,
        );
        let want = std::fs::read_to_string(run.join("benchmark_percentile.json")).unwrap();
        assert_same_text(
            &format!("{what} percentiles"),
            &acc.percentiles().to_json_string(),
            &want,
        );

        // The same text when every column spills sorted runs of 3 values to disk and merges them back
        // (flat memory changes nothing, bit for bit).
        let spilled = replay_spilling(run, 3);
        assert!(spilled.spilled_bytes() > 0 || acc.succeeded() < 3, "{what}");
        let mut s = spilled.summary();
        s.extras = Default::default();
        assert_same_text(
            &format!("{what} summary (spilled)"),
            &s.to_json_string(),
            &want_summary,
        );
        assert_same_text(
            &format!("{what} percentiles (spilled)"),
            &spilled.percentiles().to_json_string(),
            &want,
        );

        // The extras: failures by kind exactly when something failed; wall-clock input throughput for
        // input-only runs.
        if acc.failed() > 0 {
            assert_eq!(
                extras.failures_by_kind,
                vec![("http_status".to_string(), acc.failed())]
            );
        } else {
            assert!(extras.failures_by_kind.is_empty());
        }
        assert!(!extras.interrupted);
        assert_eq!(
            extras.wall_input_throughput.is_some(),
            context(run).input_only
        );
    }
}

#[test]
fn golden_error_run_reports_failures_after_evalscope_keys() {
    let mut runs = Vec::new();
    run_dirs(&golden_root().join("g_errors"), &mut runs);
    let acc = replay(&runs[0]);
    assert_eq!((acc.total(), acc.succeeded(), acc.failed()), (12, 9, 3));
    let text = acc.summary().to_json_string();
    assert!(text.ends_with(
        "    \"Input Throughput (tok/s)\": 0.0,\n    \"Failures By Kind\": {\n        \"http_status\": 3\n    }\n}"
    ));
}

#[test]
fn golden_embedding_run_keeps_evalscope_input_throughput_and_adds_wall_clock() {
    let mut runs = Vec::new();
    run_dirs(&golden_root().join("f_embedding"), &mut runs);
    let acc = replay(&runs[0]);
    let s = acc.summary();
    assert_eq!(s.input_throughput, 7722.5848);
    // Σprompt / test duration: 1896 tokens over the 0.1274 s window.
    let wall = s.extras.wall_input_throughput.unwrap();
    assert!((wall - 1896.0 / 0.1274).abs() < 10.0, "{wall}");
    let log = acc.running_log_json();
    assert!(log.contains("\n  \"Input Throughput (tok/s)\": 7722.5848\n}"));
    assert!(!log.contains("TTFT") && !log.contains("Output Throughput"));
}

#[test]
fn golden_seed_run_log_message_has_no_defaulted_keys() {
    let mut runs = Vec::new();
    run_dirs(&golden_root().join("a_seed"), &mut runs);
    let log = replay(&runs[0]).running_log_json();
    assert!(log.starts_with("{\n  \"Test Duration (s)\": 26.5844,\n  \"Concurrency\": 1,\n"));
    assert!(log.ends_with("  \"Avg ITL (ms)\": 10.0,\n  \"Avg Output Tokens\": 128.0\n}"));
    assert!(!log.contains("Input Throughput"));
}
