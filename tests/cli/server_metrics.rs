//! `--server-metrics` against the simulator's `/metrics`: counter deltas equal to the simulator's truth,
//! server TTFT quantiles within their bucket error of the true ones, the default endpoint, and a missing,
//! slow or garbage `/metrics` that never fails or slows a run.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;
use llmperf::sim::{MetricsFault, SimConfig, SimServer};

fn sim(fault: Option<MetricsFault>) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(30),
        itl: Duration::from_millis(2),
        metrics_fault: fault,
        threads: 2,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

fn run(sim: &SimServer) -> (RunDir, Value) {
    let run = Run::against(sim)
        .flags("--prompt 'one two three four five' --parallel 4 --number 24 --max-tokens 6")
        .flags("--no-test-connection --server-metrics --server-metrics-interval 0.05")
        .ok_dir("parallel_4_number_24");
    let summary = run.summary();
    (run, summary)
}

/// The true value at nearest rank `ceil(q·n)` of `values`.
fn true_quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

#[test]
fn counter_deltas_and_server_ttft_match_the_simulator_truth() {
    let sim = sim(None);
    let (run, summary) = run(&sim);
    let truth = sim.truth();
    assert_eq!(
        truth.len(),
        24,
        "no connection test: every request is the run's"
    );
    let prompt: u64 = truth.iter().map(|t| t.prompt_tokens).sum();
    let generated: u64 = truth.iter().map(|t| t.completion_tokens).sum();
    assert_eq!(summary["Server Requests"], Value::from(24));
    assert_eq!(summary["Server Prompt Tokens"], Value::from(prompt));
    assert_eq!(summary["Server Generation Tokens"], Value::from(generated));
    assert_eq!(summary["Server Preemptions"], Value::from(0));
    // The rows agree too (usage as the client read it).
    let rows = run.rows();
    let usage_prompt: i64 = rows.iter().map(|r| r.prompt_tokens.unwrap()).sum();
    assert_eq!(usage_prompt as u64, prompt);

    let file = json_file(&run.join("server_metrics.json"));
    let endpoint = &file["endpoints"][0];
    assert_eq!(
        endpoint["url"],
        Value::from(format!("{}/metrics", sim.base_url()))
    );
    assert_eq!(endpoint["baseline_scrape"], Value::Bool(true));
    assert_eq!(endpoint["final_scrape"], Value::Bool(true));
    assert!(endpoint["scrapes"].as_u64().unwrap() >= 2);
    let counters = &endpoint["counters"];
    assert_eq!(
        counters["vllm:generation_tokens_total"]["delta"],
        Value::from(generated)
    );
    // Every counter the simulator exposes, against its truth (it caches nothing and never preempts).
    for (family, truth_value) in [
        ("vllm:request_success_total", 24),
        ("vllm:prompt_tokens_total", prompt),
        ("vllm:generation_tokens_total", generated),
        ("vllm:prefix_cache_queries_total", prompt),
        ("vllm:prefix_cache_hits_total", 0),
        ("vllm:num_preemptions_total", 0),
    ] {
        assert_eq!(
            counters[family]["delta"],
            Value::from(truth_value),
            "{family}"
        );
    }
    assert_eq!(counters.as_object().unwrap().len(), 6);

    // Server TTFT quantiles: within the stated bucket error of the truth.
    let mut ttft_ms: Vec<f64> = truth
        .iter()
        .map(|t| (t.first_token_s.unwrap() - t.received_s) * 1000.0)
        .collect();
    let hist = &endpoint["histograms"]["vllm:time_to_first_token_seconds"];
    assert_eq!(hist["count"], Value::from(24));
    for (label, q) in [("P50", 0.5), ("P90", 0.9), ("P99", 0.99)] {
        let est = summary[format!("Server {label} TTFT (ms)")]
            .as_f64()
            .unwrap();
        let err = summary[format!("Server {label} TTFT Bucket Error (ms)")]
            .as_f64()
            .unwrap();
        let truth_q = true_quantile(&mut ttft_ms, q);
        assert!(
            (est - truth_q).abs() <= err + 0.01,
            "{label}: server {est} ms ± {err}, truth {truth_q} ms"
        );
    }
    let mean_truth = ttft_ms.iter().sum::<f64>() / ttft_ms.len() as f64;
    let mean = summary["Server Avg TTFT (ms)"].as_f64().unwrap();
    assert!((mean - mean_truth).abs() < 0.02, "{mean} vs {mean_truth}");
    // Client vs server: the client's TTFT includes the network and its own overhead.
    let overhead = summary["TTFT Client Overhead (ms)"].as_f64().unwrap();
    let client = summary["Avg TTFT (ms)"].as_f64().unwrap();
    assert!((client - mean - overhead).abs() < 0.02);
    assert!(summary["Server Avg Queue Time (ms)"].as_f64().unwrap() == 0.0);
    // Gauges: never more running than the concurrency.
    let max_running = summary["Server Max Running Requests"].as_f64().unwrap();
    assert!((0.0..=4.0).contains(&max_running), "{max_running}");
    assert!(
        file["timeline"]["Running Requests"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );

    // The report: the client-vs-server table and the server gauges on the timeline's axis.
    let html = std::fs::read_to_string(run.parent().unwrap().join("perf_report.html")).unwrap();
    assert!(html.contains("Client vs server"));
    assert!(html.contains(r#"data-chart="server-0-0""#));
    assert!(html.contains("Running Requests at each scrape"));

    // The server keys follow every evalscope key.
    let keys: Vec<&String> = summary.as_object().unwrap().keys().collect();
    let first_server = keys.iter().position(|k| k.starts_with("Server ")).unwrap();
    let last_evalscope = keys
        .iter()
        .position(|k| *k == "Input Throughput (tok/s)")
        .unwrap();
    assert!(first_server > last_evalscope);
}

/// The longest stretch of the run's measured window with no request in flight, in seconds.
fn longest_idle_gap_s(rows: &[Row]) -> f64 {
    let mut spans: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.start_time, r.completed_time))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut covered = spans[0].1;
    let mut gap = 0.0f64;
    for (start, end) in spans {
        gap = gap.max(start - covered);
        covered = covered.max(end);
    }
    gap
}

#[test]
fn a_bad_metrics_endpoint_is_a_warning_and_the_keys_are_absent() {
    // Missing (an immediate 404) first: the baseline for how long a whole invocation takes right now.
    let mut missing_elapsed = None;
    for fault in [
        MetricsFault::Missing,
        MetricsFault::Garbage,
        MetricsFault::Slow,
    ] {
        let sim = sim(Some(fault));
        let started = Instant::now();
        let (run, summary) = run(&sim);
        let elapsed = started.elapsed();
        let baseline = *missing_elapsed.get_or_insert(elapsed);
        assert_eq!(summary["Success Requests"], Value::from(24), "{fault:?}");
        let server_keys: Vec<&String> = summary
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| k.starts_with("Server ") || k.starts_with("TTFT Client"))
            .collect();
        assert!(server_keys.is_empty(), "{fault:?}: {server_keys:?}");
        // The run itself was not held up: requests were in flight throughout its measured window (a
        // scrape blocking the dispatch would leave a gap of its 2 s timeout; 1 s is far above any
        // scheduling hiccup).
        let gap = longest_idle_gap_s(&run.rows());
        assert!(gap < 1.0, "{fault:?}: no request in flight for {gap} s");
        // A slow endpoint is waited for at most the baseline and final bounds (2 s each), never its 10 s:
        // compared with the immediate 404 on the same machine at the same time.
        assert!(
            elapsed < baseline + llmperf::sim::metrics::SLOW_METRICS_DELAY - Duration::from_secs(2),
            "{fault:?}: {elapsed:?} (a 404 took {baseline:?})"
        );
        let log = std::fs::read_to_string(run.parent().unwrap().join("benchmark.log")).unwrap();
        assert!(
            log.contains("--server-metrics:") && log.contains("WARN"),
            "{fault:?}: no warning in the log"
        );
        if let Ok(text) = std::fs::read_to_string(run.join("server_metrics.json")) {
            let file: Value = serde_json::from_str(&text).unwrap();
            assert!(file["endpoints"][0]["failed_scrapes"].as_u64().unwrap() >= 1);
            assert!(file["summary"].as_object().unwrap().is_empty());
        }
    }
}

#[test]
fn mock_api_scrapes_its_own_simulator_and_counts_reasoning() {
    let summary = Run::new()
        .flags(r#"--api mock --model m --prompt 'a b c' --parallel 2 --number 10 --max-tokens 8 --extra-args '{"ignore_eos": true}'"#)
        .flags("--mock-ttft-ms 5 --mock-itl-ms 4 --mock-reasoning-tokens 3 --server-metrics")
        .ok_dir("parallel_2_number_10")
        .summary();
    // The connection test ran before the baseline scrape: the deltas are the run's own 10 requests.
    assert_eq!(summary["Server Requests"], Value::from(10));
    assert_eq!(summary["Server Generation Tokens"], Value::from(80));
    assert_eq!(summary["Server Prompt Tokens"], Value::from(30));
    // Reasoning: 3 of 8 tokens, first reasoning token at TTFT, the answer after it.
    assert_eq!(summary["Reasoning Requests"], Value::from(10));
    assert_eq!(summary["Avg Reasoning Tokens"], Value::from(3.0));
    assert_eq!(summary["Avg Answer Tokens"], Value::from(5.0));
    let ttft = summary["Avg TTFT (ms)"].as_f64().unwrap();
    let first_reasoning = summary["Avg Time to First Reasoning Token (ms)"]
        .as_f64()
        .unwrap();
    assert!(
        (ttft - first_reasoning).abs() < 0.02,
        "evalscope's TTFT unchanged"
    );
    let ttfo = summary["Avg TTFO (ms)"].as_f64().unwrap();
    // The answer starts 3 tokens (12 ms) after the reasoning on the server; the client's own read delays
    // shift both stamps, so only the order is asserted here (the truth test checks the times).
    assert!(ttfo > ttft, "TTFO {ttfo} vs TTFT {ttft}");
}

#[test]
fn ttfo_and_reasoning_counts_match_the_simulator_truth() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(10),
        itl: Duration::from_millis(5),
        reasoning_tokens: 4,
        ..SimConfig::default()
    })
    .unwrap();
    let run = Run::against(&sim)
        .flags(r#"--prompt 'a b' --parallel 1 --number 6 --max-tokens 3 9 --extra-args '{"ignore_eos": true}'"#)
        .flags("--seed 7 --no-test-connection")
        .ok_dir("parallel_1_number_6");
    let conn = rusqlite::Connection::open(run.db()).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT start_time, completion_tokens, reasoning_tokens, answer_tokens, first_reasoning_latency,
                    first_answer_latency, first_chunk_latency FROM result ORDER BY rowid",
        )
        .unwrap();
    type DbRow = (f64, i64, i64, i64, f64, Option<f64>, f64);
    let rows: Vec<DbRow> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let truth = sim.truth();
    assert_eq!(rows.len(), 6);
    // One request at a time: rows and truth records are in the same order.
    for (row, t) in rows.iter().zip(&truth) {
        let (start, completion, reasoning, answer, first_reasoning, first_answer, ttft) = *row;
        assert_eq!(completion as u64, t.completion_tokens);
        assert_eq!(reasoning as u64, t.reasoning_tokens);
        assert_eq!(reasoning as u64, t.completion_tokens.min(4));
        assert_eq!(answer as u64, t.completion_tokens - t.reasoning_tokens);
        assert_eq!(
            first_reasoning, ttft,
            "the first reasoning token is evalscope's first chunk"
        );
        // TTFO: the client saw the first answer token after the simulator sent it, within a few ms.
        match (first_answer, t.first_answer_s) {
            (Some(fa), Some(truth_s)) => {
                let seen_s = start + fa;
                assert!(
                    seen_s >= truth_s - 1e-4 && seen_s - truth_s < 0.005,
                    "client {seen_s} vs truth {truth_s}"
                );
            }
            (None, None) => assert!(t.completion_tokens <= 4),
            other => panic!("TTFO {other:?} for {} tokens", t.completion_tokens),
        }
    }
}
