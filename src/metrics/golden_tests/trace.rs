//! Multi-turn goldens: real evalscope 1.14.1 runs against llmperf's simulator (prefix cache on), committed
//! under `tests/fixtures/evalscope-golden/` (`h_multi_turn_random`, `i_multi_turn_sharegpt`). Their stored
//! rows are replayed through the accumulator and the trace accumulator, and the run's summary file,
//! the percentile file, `trace_summary.json` and the `Per-trace summary` table of `benchmark.log`
//! must come out byte for byte.
//!
//! evalscope's database keeps neither the conversation nor the turn of a row, so both are recovered from
//! the bodies: a turn's messages start with the previous turn's messages (plus the assistant's answer),
//! and every turn of these datasets adds one user message. evalscope keeps no usage chunk in
//! `response_messages`, so `cached_tokens` is rebuilt as evalscope's own rule gives it without one: 0 on a
//! conversation's first turn, else the previous turn's prompt + completion tokens — which is also exactly
//! what the simulator's prefix cache reported (the goldens' `Eligible Cache Hit Rate` is 100 % wherever a
//! later turn exists).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::metrics::samples::Sample;
use crate::metrics::trace::{TraceAccumulator, TraceTurn};
use crate::metrics::{Accumulator, SummaryContext};

fn fixture_runs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/evalscope-golden");
    let mut out = Vec::new();
    for case in ["h_multi_turn_random", "i_multi_turn_sharegpt"] {
        let mut stack = vec![root.join(case)];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("golden dir") {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "benchmark_data.db") {
                    out.push(dir.clone());
                }
            }
        }
    }
    assert_eq!(out.len(), 2, "expected two multi-turn golden runs: {out:?}");
    out
}

/// Replays the run's rows: `(summary accumulator, trace accumulator)`.
fn replay(run: &Path) -> (Accumulator, TraceAccumulator) {
    let con = super::golden_db(run);
    let mut stmt = con
        .prepare(
            "SELECT start_time, completed_time, success, is_stream, latency, first_chunk_latency, \
             prompt_tokens, completion_tokens, time_per_output_token, inter_token_latencies, request \
             FROM result ORDER BY rowid",
        )
        .expect("query");
    let args: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("benchmark_args.json")).expect("args"),
    )
    .expect("args JSON");
    let mut acc = Accumulator::new(SummaryContext {
        concurrency_as_written: args["parallel"].as_i64().expect("parallel"),
        rate_as_written: args["rate"].as_f64().expect("rate"),
        input_only: false,
        pd_metrics: false,
    });
    let mut traces = TraceAccumulator::default();
    // Open traces: (key, messages of the last turn sent, its prompt + completion tokens).
    let mut open: Vec<(u64, Vec<Value>, u64)> = Vec::new();
    let mut rows = stmt.query([]).expect("rows");
    while let Some(row) = rows.next().expect("row") {
        let request: String = row.get(10).unwrap();
        let body: Value = serde_json::from_str(&request).expect("body");
        let messages = body["messages"].as_array().expect("messages").clone();
        let users = messages.iter().filter(|m| m["role"] == "user").count();
        let f = |i: usize| row.get::<_, Option<f64>>(i).unwrap().unwrap_or(0.0);
        let u = |i: usize| row.get::<_, Option<i64>>(i).unwrap().unwrap_or(0) as u64;
        let success = row.get::<_, i64>(2).unwrap() == 1;
        assert!(success, "the goldens have no failed turn");
        let seen = u(6) + u(7);
        let (key, cached) = if users == 1 {
            open.push((open.len() as u64, messages.clone(), seen));
            (open.len() as u64 - 1, 0)
        } else {
            let (key, last, prev) = open
                .iter_mut()
                .find(|(_, prev, _)| {
                    prev.len() < messages.len() && messages[..prev.len()] == prev[..]
                })
                .expect("the previous turn of this row");
            *last = messages.clone();
            let cached = std::mem::replace(prev, seen);
            (*key, cached)
        };
        let sample = Sample {
            start_time: f(0),
            completed_time: f(1),
            success,
            is_stream: row.get::<_, i64>(3).unwrap() == 1,
            latency: f(4),
            ttft: f(5),
            prompt_tokens: u(6),
            completion_tokens: u(7),
            tpot: f(8),
            cached_tokens: Some(cached),
            turn: Some((users as u32, users == 1)),
            ..Sample::default()
        };
        let itl: String = row.get(9).unwrap();
        let itl = itl
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().parse::<f64>().expect("ITL"));
        acc.add_sample(&sample, itl);
        traces.feed_turn(
            key,
            TraceTurn {
                start_time: sample.start_time,
                completed_time: sample.completed_time,
                ttft: sample.ttft,
                latency: sample.latency,
                prompt_tokens: sample.prompt_tokens,
                completion_tokens: sample.completion_tokens,
                cached_tokens: cached,
            },
        );
    }
    (acc, traces)
}

fn assert_same_text(what: &str, got: &str, want: &str) {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{what}: line {} differs", i + 1);
    }
    assert_eq!(got, want, "{what}: texts differ");
}

/// The `Per-trace summary (N traces):` block of the run root's `benchmark.log`.
fn logged_trace_table(run: &Path) -> String {
    let log = std::fs::read_to_string(run.parent().unwrap().join("benchmark.log")).unwrap();
    let start = log
        .find("Per-trace summary (")
        .expect("trace table in the log");
    let block: Vec<&str> = log[start..]
        .lines()
        .take_while(|l| !l.starts_with("20"))
        .collect();
    block.join("\n")
}

#[test]
fn multi_turn_goldens_are_reproduced_byte_for_byte() {
    for run in fixture_runs() {
        let what = run.display().to_string();
        let (acc, traces) = replay(&run);
        let mut summary = acc.summary();
        summary.extras = Default::default();
        let want = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
        assert_same_text(&format!("{what} summary"), &summary.to_json_string(), &want);
        let want = std::fs::read_to_string(run.join("benchmark_percentile.json")).unwrap();
        assert_same_text(
            &format!("{what} percentiles"),
            &acc.percentiles().to_json_string(),
            &want,
        );
        let trace = traces.summary();
        let want = std::fs::read_to_string(run.join("trace_summary.json")).unwrap();
        assert_same_text(&format!("{what} trace"), &trace.to_json_string(), &want);
        let table = format!(
            "Per-trace summary ({} traces):\n{}",
            trace.n_traces,
            trace.to_table()
        );
        assert_same_text(&format!("{what} table"), &table, &logged_trace_table(&run));
    }
}

/// The `workload_trace` golden (`j_workload_trace`): its rows replayed through the accumulator reproduce
/// the run's summary file and the percentile file. The run was single-turn, so the server's
/// `cached_tokens` (the simulator's prefix cache; evalscope keeps no usage chunk) are recomputed by running
/// the same prefix cache over the stored bodies in send order.
#[test]
fn workload_trace_golden_is_reproduced_from_its_rows() {
    use crate::sim::prefix_cache::{Chain, PrefixCache};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/evalscope-golden/j_workload_trace/outputs");
    let stamp = std::fs::read_dir(&root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let run = stamp.join("trace/rate_-1.0_number_1000");
    let con = super::golden_db(&run);
    let mut stmt = con
        .prepare(
            "SELECT start_time, completed_time, success, is_stream, latency, first_chunk_latency, prompt_tokens, \
             completion_tokens, time_per_output_token, inter_token_latencies, request, request_id FROM result ORDER BY rowid",
        )
        .unwrap();
    struct Row {
        sample: Sample,
        itl: Vec<f64>,
        body: String,
        request_id: String,
    }
    let mut rows: Vec<Row> = stmt
        .query_map([], |r| {
            let f = |i: usize| r.get::<_, Option<f64>>(i).map(|v| v.unwrap_or(0.0));
            let u = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0) as u64);
            let itl: String = r.get(9)?;
            Ok(Row {
                sample: Sample {
                    start_time: f(0)?,
                    completed_time: f(1)?,
                    success: r.get::<_, i64>(2)? == 1,
                    is_stream: r.get::<_, i64>(3)? == 1,
                    latency: f(4)?,
                    ttft: f(5)?,
                    prompt_tokens: u(6)?,
                    completion_tokens: u(7)?,
                    tpot: f(8)?,
                    ..Sample::default()
                },
                itl: serde_json::from_str(&itl).unwrap(),
                body: r.get(10)?,
                request_id: r.get(11)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), 12);
    assert!(
        ids.iter().all(|id| id.starts_with("req-")),
        "request ids stored: {ids:?}"
    );
    let cache = PrefixCache::default();
    let mut by_send: Vec<usize> = (0..rows.len()).collect();
    by_send.sort_by(|&a, &b| {
        rows[a]
            .sample
            .start_time
            .total_cmp(&rows[b].sample.start_time)
    });
    for i in by_send {
        let (chain, chat) = Chain::of_body(rows[i].body.as_bytes()).unwrap();
        let answer = rows[i].sample.completion_tokens as u32;
        rows[i].sample.cached_tokens = Some(cache.serve(&chain, chat, answer, "hello"));
    }
    let mut acc = Accumulator::new(SummaryContext {
        concurrency_as_written: -1,
        rate_as_written: -1.0,
        input_only: false,
        pd_metrics: false,
    });
    for r in &rows {
        acc.add_sample(&r.sample, r.itl.iter().copied());
    }
    let mut summary = acc.summary();
    summary.extras = Default::default();
    let want = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
    assert_same_text("trace summary", &summary.to_json_string(), &want);
    let want = std::fs::read_to_string(run.join("benchmark_percentile.json")).unwrap();
    assert_same_text(
        "trace percentiles",
        &acc.percentiles().to_json_string(),
        &want,
    );
}
