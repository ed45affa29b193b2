//! Measurement truth and client self-diagnostics: stored requests joined with the simulator's ground truth,
//! send lag from the stored `scheduled_time` / `send_time`, the extra summary keys against the database,
//! the client-limited warning on a deliberately starved client, and the open-file limit.

use std::path::Path;
use std::process::Output;

use crate::common::*;
use llmperf::metrics::nearest_rank;
use llmperf::sim::join;
use serde_json::Value;

/// Keys of a JSON object file, in file order.
fn keys_in_order(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    v.keys().cloned().collect()
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

const CLIENT_KEYS: [&str; 8] = [
    "Client CPU (% of one core)",
    "Client CPU (% of all cores)",
    "Client Scheduling Delay (ms)",
    "Send Lag P50 (ms)",
    "Send Lag P99 (ms)",
    "Read Lag P50 (ms)",
    "Read Lag P99 (ms)",
    "Client Limited",
];

#[test]
fn every_stored_request_joins_its_ground_truth() {
    let sim = timed_sim(20, 2);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt 'one two three' --parallel 4 --number 24 --warmup-num 4 --max-tokens 8")
        .flags(r#"--extra-args '{"ignore_eos": true}'"#)
        .ok_dir("parallel_4_number_24");
    let rows = join::read_client_rows(&run.db()).unwrap();
    assert_eq!(rows.len(), 24);
    let truth = sim.truth();
    assert_eq!(
        truth.len(),
        24 + 4 + 1,
        "measured + warmup + connection test"
    );
    let joined = join::join(rows, &truth);
    assert_eq!(joined.pairs.len(), 24, "every stored request has its truth");
    assert_eq!(joined.unmatched_rows, 0);
    assert_eq!(
        joined.unmatched_truth, 5,
        "warmup and connection test are not stored"
    );
    let mut with_arrival = 0;
    for (row, t) in &joined.pairs {
        if let Some(arrived) = t.arrived_s {
            // The kernel stamps the request's arrival during the client's write, before the simulator
            // parses it (1 ms of slack for reading two clocks).
            with_arrival += 1;
            assert!(arrived + 0.001 >= row.send_s, "{row:?} {t:?}");
            assert!(arrived <= t.received_s, "{t:?}");
        }
        assert!(row.success);
        assert_eq!(row.chunk_times_s.len(), 8);
        assert_eq!(t.chunk_times_s.len(), 8, "one truth time per output chunk");
        // The client sends before the server receives, and reads after the server writes.
        assert!(row.send_s <= t.received_s, "{row:?} {t:?}");
        for (client, server) in row.chunk_times_s.iter().zip(&t.chunk_times_s) {
            assert!(client >= server, "read before written: {client} < {server}");
        }
        let true_ttft = t.first_token_s.unwrap() - t.received_s;
        assert!(true_ttft >= 0.020);
        let error = row.ttft_s().unwrap() - true_ttft;
        assert!((0.0..1.0).contains(&error), "TTFT error {error} s");
    }
    // Linux stamps arrivals (the first segments after stamping is first turned on may carry none).
    if cfg!(target_os = "linux") {
        assert!(
            with_arrival >= 20,
            "{with_arrival} of 24 requests had an arrival stamp"
        );
    }
}

/// A client that reads late (its thread blocked 250 ms before every socket read, as a busy or descheduled
/// client would be) still times each chunk when it arrived: the kernel's receive stamps. Timed at the
/// read instead, every TTFT would be at least 200 ms too long (first chunk written at 30 ms, read at 250 ms
/// or later): a margin no loaded machine closes, where the stamp's own error is the simulator's time
/// between stamping a chunk and writing it.
#[cfg(target_os = "linux")]
#[test]
fn a_late_reader_still_times_chunks_at_arrival() {
    let sim = timed_sim(30, 20);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags(r#"--prompt x --parallel 1 --number 4 --max-tokens 3 --extra-args '{"ignore_eos": true}'"#)
        .env("LLMPERF_INJECT_READ_DELAY_US", "250000")
        .ok_dir("parallel_1_number_4");
    let rows = join::read_client_rows(&run.db()).unwrap();
    let joined = join::join(rows, &sim.truth());
    assert_eq!(joined.pairs.len(), 4);
    for (row, t) in &joined.pairs {
        assert!(row.success);
        for (client, server) in row.chunk_times_s.iter().zip(&t.chunk_times_s) {
            assert!(
                client >= server,
                "timed before written: {client} < {server}"
            );
        }
        let true_ttft = t.first_token_s.unwrap() - t.received_s;
        let error_ms = (row.ttft_s().unwrap() - true_ttft) * 1e3;
        assert!(error_ms < 100.0, "TTFT error {error_ms:.2} ms");
    }
    let s = run.summary();
    let read_lag_p99 = ms(&s["Read Lag P99 (ms)"]);
    assert!(read_lag_p99 >= 10.0, "the wait is visible: {s}");
    assert!(ms(&s["Read Lag P50 (ms)"]) <= read_lag_p99);
    // Falling behind its streams is the client's own limit, and it says so.
    assert_eq!(s["Client Limited"], true);
    let warning = s["Client Warning"].as_str().unwrap();
    assert!(warning.contains("read lag p50"), "{warning}");
}

#[test]
fn send_lag_and_client_keys_agree_with_the_database() {
    let sim = timed_sim(5, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 3 --number 30 --max-tokens 4")
        .ok_dir("parallel_3_number_30");
    let db_rows = run.rows();
    assert_eq!(db_rows.len(), 30);
    let mut lags: Vec<f64> = db_rows
        .iter()
        .map(|r| r.send_time.unwrap() - r.scheduled_time.unwrap())
        .collect();
    assert!(
        lags.iter().all(|l| *l >= 0.0),
        "sent before intended: {lags:?}"
    );
    lags.sort_by(f64::total_cmp);
    let summary_path = run.join("benchmark_summary.json");
    let s = json_file(&summary_path);
    let p50 = ms(&s["Send Lag P50 (ms)"]);
    let p99 = ms(&s["Send Lag P99 (ms)"]);
    assert!((p50 - nearest_rank(&lags, 50) * 1e3).abs() < 0.001, "{p50}");
    assert!((p99 - nearest_rank(&lags, 99) * 1e3).abs() < 0.001, "{p99}");
    let one = ms(&s["Client CPU (% of one core)"]);
    let all = ms(&s["Client CPU (% of all cores)"]);
    assert!(one > 0.0 && all > 0.0 && all <= one, "{one} {all}");
    assert!(ms(&s["Client Scheduling Delay (ms)"]) >= 0.0);
    assert!(s["Client Limited"].is_boolean());
    assert!(
        s.get("Avg TTFT From Intended Send (ms)").is_none(),
        "closed loop"
    );
    // The extra keys come after every evalscope key.
    let keys = keys_in_order(&summary_path);
    let last_evalscope = keys
        .iter()
        .position(|k| k == "Input Throughput (tok/s)")
        .unwrap();
    for k in CLIENT_KEYS {
        let at = keys
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("{k}"));
        assert!(at > last_evalscope, "{k} before evalscope's keys");
    }
}

#[test]
fn open_loop_reports_timings_from_the_intended_send_time() {
    let sim = timed_sim(10, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --open-loop --rate 100 --number 25 --max-tokens 4")
        .ok_dir("rate_100.0_number_25");
    let db_rows = run.rows();
    assert_eq!(db_rows.len(), 25);
    let from_intended: Vec<f64> = db_rows
        .iter()
        .filter(|r| r.success)
        .map(|r| r.chunk_times[0] - r.scheduled_time.unwrap())
        .collect();
    let s = run.summary();
    let avg = ms(&s["Avg TTFT From Intended Send (ms)"]);
    let mean = from_intended.iter().sum::<f64>() / from_intended.len() as f64 * 1e3;
    assert!((avg - mean).abs() < 0.02, "{avg} vs {mean}");
    assert!(
        avg >= ms(&s["Avg TTFT (ms)"]) - 0.01,
        "intended ≤ actual send time"
    );
    assert!(
        ms(&s["P99 TTFT From Intended Send (ms)"]) >= ms(&s["P50 TTFT From Intended Send (ms)"])
    );
    assert!(
        ms(&s["Avg Latency From Intended Send (s)"]) >= ms(&s["Avg Latency (s)"]) - 0.0001,
        "{s}"
    );
    for r in &db_rows {
        assert!(r.send_time.unwrap() >= r.scheduled_time.unwrap());
    }
}

#[test]
fn a_starved_client_warns_that_it_limited_the_run() {
    let sim = timed_sim(2, 1);
    // 8 ms of CPU burnt before every send: the send lag is at least that, far above the 5 ms limit.
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 2 --number 10 --max-tokens 2")
        .env("LLMPERF_INJECT_CLIENT_WORK_US", "8000");
    let o = run.output();
    ok(&o);
    let root = run.root();
    let s = run.run_dir("parallel_2_number_10").summary();
    assert_eq!(s["Client Limited"], true);
    assert!(ms(&s["Send Lag P50 (ms)"]) >= 8.0, "{s}");
    let warning = s["Client Warning"].as_str().unwrap();
    assert!(warning.contains("send lag p99"), "{warning}");
    let stderr = stderr(&o);
    // The log line's level says it once (not "WARN: WARNING: …").
    assert!(
        stderr.contains("- WARN: the client itself limited this run"),
        "{stderr}"
    );
    assert!(!stderr.contains("WARN: WARNING"), "{stderr}");
    // The same holds for the load verdict's line (a starved client delivers less than --parallel).
    assert!(
        stderr.contains("- WARN: the load was not as configured"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(root.join("performance_summary.txt")).unwrap();
    assert!(report.contains("Client Diagnostics"), "{report}");
    assert!(
        report.contains("! Run conc 2: WARNING: the client itself limited this run"),
        "{report}"
    );
    let log = std::fs::read_to_string(root.join("benchmark.log")).unwrap();
    assert!(log.contains("- WARN: the client itself limited this run"));
}

/// Runs `run` with its open-file limit set to `soft` / `hard` before exec.
fn with_file_limit(run: &Run, soft: u64, hard: u64) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = run.command();
    #[allow(unsafe_code)]
    // SAFETY: setrlimit is async-signal-safe and only touches the child about to exec.
    unsafe {
        cmd.pre_exec(move || {
            let rl = libc::rlimit {
                rlim_cur: soft as libc::rlim_t,
                rlim_max: hard as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("llmperf runs")
}

#[test]
fn the_open_file_limit_is_raised_or_named() {
    let mock = "--api mock --model m --prompt x --mock-ttft-ms 1 --mock-itl-ms 1 --max-tokens 2 --number 4";
    // A hard limit too small for the run: exit 2, naming the flag and the limit; nothing written.
    let run = Run::new().flags(mock).flags("--parallel 1000");
    let o = with_file_limit(&run, 256, 256);
    let stderr = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--parallel 1000") && stderr.contains("RLIMIT_NOFILE"),
        "{stderr}"
    );
    assert_eq!(run.out_entries(), 0);
    // A soft limit below the need with room under the hard limit: raised, and the run goes through.
    let hard = llmperf::resources::file_limit()
        .hard
        .unwrap_or(u64::MAX)
        .min(4096);
    if hard < 300 * 2 + 64 {
        eprintln!("hard open-file limit {hard} too small to check raising; skipped");
        return;
    }
    let o = with_file_limit(&Run::new().flags(mock).flags("--parallel 300"), 256, hard);
    ok(&o);
}
