//! The output tree, the database and the numbers, recomputed here from the stored rows and the
//! simulator's ground truth.

use crate::common::*;

const EVALSCOPE_COLUMNS: [&str; 14] = [
    "request",
    "start_time",
    "inter_token_latencies",
    "success",
    "response_messages",
    "completed_time",
    "latency",
    "first_chunk_latency",
    "prompt_tokens",
    "completion_tokens",
    "max_gpu_memory_cost",
    "time_per_output_token",
    "request_id",
    "is_stream",
];

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn single_run_tree_rows_and_summary_match_the_data() {
    let sim = timed_sim(20, 3);
    let cmd = Run::at(&sim, "/v1/chat/completions")
        .model("org/My-Model")
        .flags(r#"--prompt 'one two three' --number 12 --parallel 3 --warmup-num 2 --max-tokens 8 --extra-args '{"ignore_eos": true}'"#);
    let stdout = cmd.ok();
    assert!(
        stdout.contains("Performance Test Summary Report"),
        "{stdout}"
    );
    let root = run_root(cmd.out(), "My-Model");
    for f in ["benchmark.log", "performance_summary.txt"] {
        assert!(root.join(f).is_file(), "{f}");
    }
    let run = root.join("parallel_3_number_12");
    for f in [
        "benchmark_args.json",
        "benchmark_data.db",
        "benchmark_summary.json",
        "benchmark_percentile.json",
    ] {
        assert!(run.join(f).is_file(), "{f}");
    }
    let db = run.join("benchmark_data.db");
    let cols = columns(&db);
    assert_eq!(&cols[..14], &EVALSCOPE_COLUMNS);
    for extra in [
        "status_code",
        "error",
        "scheduled_time",
        "send_time",
        "chunk_times",
    ] {
        assert!(
            cols[14..].iter().any(|c| c == extra),
            "extra column {extra}: {cols:?}"
        );
    }
    let rows = rows(&db);
    assert_eq!(rows.len(), 12, "warmup requests are not stored");
    assert_eq!(
        sim.requests().len(),
        1 + 2 + 12,
        "connection test + warmup + measured"
    );
    for r in &rows {
        assert!(r.success && r.is_stream);
        assert_eq!(r.completion_tokens, Some(8));
        assert_eq!(r.prompt_tokens, Some(3));
        assert_eq!(r.itl.len(), 7);
        assert_eq!(r.chunk_times.len(), 8);
        assert_eq!(r.status_code, Some(200));
        assert!(r.error.is_none());
        let latency = r.latency.unwrap();
        assert!((latency - (r.completed_time - r.start_time)).abs() < 1e-9);
        let ttft = r.ttft.unwrap();
        assert!((ttft - (r.chunk_times[0] - r.start_time)).abs() < 1e-6);
        let tpot = (latency - ttft) / 7.0;
        assert!((r.tpot.unwrap() - tpot).abs() < 1e-9);
        assert!(r.scheduled_time.unwrap() <= r.send_time.unwrap());
        assert!((r.send_time.unwrap() - r.start_time).abs() < 1e-9);
    }

    // The summary, recomputed from the rows with evalscope's formulas.
    let s = json_file(&run.join("benchmark_summary.json"));
    let start = rows
        .iter()
        .map(|r| r.start_time)
        .fold(f64::INFINITY, f64::min);
    let end = rows.iter().map(|r| r.completed_time).fold(0.0, f64::max);
    let duration = end - start;
    let lat: Vec<f64> = rows.iter().map(|r| r.latency.unwrap()).collect();
    let ttft: Vec<f64> = rows.iter().map(|r| r.ttft.unwrap()).collect();
    let tpot: Vec<f64> = rows.iter().map(|r| r.tpot.unwrap()).collect();
    let itl: Vec<f64> = rows.iter().flat_map(|r| r.itl.clone()).collect();
    let expect = [
        ("Test Duration (s)", py_round(duration, 4)),
        ("Req Throughput (req/s)", py_round(12.0 / duration, 4)),
        ("Avg Latency (s)", py_round(mean(&lat), 4)),
        ("Avg TTFT (ms)", py_round(mean(&ttft) * 1000.0, 2)),
        ("Avg TPOT (ms)", py_round(mean(&tpot) * 1000.0, 2)),
        ("Avg ITL (ms)", py_round(mean(&itl) * 1000.0, 2)),
        ("Output Throughput (tok/s)", py_round(96.0 / duration, 4)),
        ("Total Throughput (tok/s)", py_round(132.0 / duration, 4)),
        ("Avg Input Tokens", 3.0),
        ("Avg Output Tokens", 8.0),
    ];
    for (k, v) in expect {
        let got = s[k].as_f64().unwrap();
        assert!(
            (got - v).abs() <= 1e-9 * v.abs().max(1.0),
            "{k}: {got} vs {v}"
        );
    }
    assert_eq!(s["Total Requests"], 12);
    assert_eq!(s["Concurrency"], 3);
    assert_eq!(s["Request Rate (req/s)"], -1.0);

    // Percentiles: nearest rank over the stored rows.
    let p = json_file(&run.join("benchmark_percentile.json"));
    let rows_p = p.as_array().unwrap();
    assert_eq!(rows_p.len(), 11);
    let mut sorted = lat.clone();
    sorted.sort_by(f64::total_cmp);
    let p50 = rows_p.iter().find(|r| r["Percentiles"] == "50%").unwrap();
    assert_eq!(
        p50["Latency (s)"].as_f64().unwrap(),
        py_round(sorted[5], 4),
        "ceil(12*0.5)-1 = 5"
    );
    assert_eq!(
        rows_p[10]["Latency (s)"].as_f64().unwrap(),
        py_round(sorted[11], 4)
    );

    // Ground truth: the client's TTFT is the server's plus the network, never less.
    let truth = sim.truth();
    let true_ttft: Vec<f64> = truth
        .iter()
        .filter_map(|t| t.first_token_s.map(|f| f - t.received_s))
        .collect();
    assert!(true_ttft.iter().all(|t| *t >= 0.020));
    let min_client = ttft.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(
        min_client >= 0.020,
        "client TTFT {min_client} below the server's 20 ms delay"
    );
    assert!(
        mean(&ttft) - mean(&true_ttft) < 0.050,
        "client adds under 50 ms on loopback"
    );

    let args = json_file(&run.join("benchmark_args.json"));
    assert_eq!(args["number"], 12);
    assert_eq!(args["parallel"], 3);
    assert_eq!(args["warmup_num"], 2.0);
    let log = std::fs::read_to_string(root.join("benchmark.log")).unwrap();
    assert!(
        log.contains("Benchmarking summary:") && log.contains("Percentile results:"),
        "{log}"
    );
}

#[test]
fn sweep_writes_one_dir_per_run_and_one_report() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .flags("--prompt hi --parallel 1 2 --number 3 4 --max-tokens 4 --name sweep");
    run.ok();
    for (dir, n) in [("parallel_1_number_3", 3), ("parallel_2_number_4", 4)] {
        let run = run.run_dir(dir);
        assert_eq!(run.summary()["Total Requests"], n, "{dir}");
        assert_eq!(run.rows().len(), n as usize);
    }
    let report = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(report.contains("Performance Overview") && report.contains("Per-Request Metrics"));
}

#[test]
fn open_loop_uses_rate_dirs_and_keeps_intended_send_times() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .flags("--prompt hi --open-loop --rate 50 100 --number 10 20 --max-tokens 4 --seed 3");
    run.ok();
    for (dir, n) in [
        ("rate_50.0_number_10", 10usize),
        ("rate_100.0_number_20", 20),
    ] {
        let run = run.run_dir(dir);
        assert_eq!(run.summary()["Concurrency"], -1, "{dir}");
        let rows = run.rows();
        assert_eq!(rows.len(), n);
        // Intended send times follow the schedule: the last one lands at number/rate after the first
        // request's schedule origin, and the client sends close to them.
        let mut sched: Vec<f64> = rows.iter().map(|r| r.scheduled_time.unwrap()).collect();
        sched.sort_by(f64::total_cmp);
        let mut lags: Vec<f64> = rows
            .iter()
            .map(|r| r.send_time.unwrap() - r.scheduled_time.unwrap())
            .collect();
        lags.sort_by(f64::total_cmp);
        assert!(lags[0] >= 0.0, "never sent before its time: {lags:?}");
        assert!(
            lags[lags.len() / 2] < 0.05,
            "median send lag on a busy machine: {lags:?}"
        );
    }
}

#[test]
fn non_stream_run_has_ttft_equal_latency() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .flags("--prompt hi --number 4 --no-stream --max-tokens 5")
        .ok_dir("parallel_1_number_4");
    let rows = run.rows();
    for r in &rows {
        assert!(r.success && !r.is_stream);
        assert_eq!(r.ttft, r.latency);
        assert_eq!(r.tpot, Some(0.0));
        assert!(r.itl.is_empty());
    }
    let s = run.summary();
    assert_eq!(s["Non-Stream Requests"], 4);
    assert_eq!(s["Avg TPOT (ms)"], 0.0);
    assert!(sim.requests()[1]
        .1
        .contains(r#""stream": false, "temperature""#));
}

#[test]
fn mock_api_quick_start_needs_no_server() {
    let run = Run::new()
        .flags("--api mock --model demo --prompt 'Write a story' --parallel 1 2 --number 3 4 --max-tokens 6")
        .flags("--mock-ttft-ms 5 --mock-itl-ms 1");
    let stdout = run.ok();
    assert!(stdout.contains("Performance Overview"));
    let s = run.run_dir("parallel_2_number_4").summary();
    assert_eq!(s["Success Requests"], 4);
    assert!(s["Avg TTFT (ms)"].as_f64().unwrap() >= 5.0);
}
