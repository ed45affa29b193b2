//! Flat memory: the `llmperf` process (its own process; the simulator runs in this one) keeps its RSS flat
//! over a long run of tiny streamed requests — exact percentiles, the client diagnostics and the workload
//! timeline spill to disk instead of growing in memory. The RSS of the first quarter of the sending window
//! and of the last quarter must be within 10 %. And the request list is produced lazily: the peak RSS of a
//! run does not grow with `--number` (a run of 5 M requests stopped by `--duration` peaks where one of
//! 10,000 does; the up-front list was 40 B a request, 200 MB here).

use std::time::{Duration, Instant};

use llmperf::sim::SimServer;

use crate::common::{bulk_sim, Run};

/// `VmRSS` of process `pid`, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// A `/proc/<pid>/status` line in KiB (`VmRSS:`, `VmHWM:` for the peak).
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Starts `run`'s `llmperf` in its own process, its output discarded.
fn spawn_quiet(run: &Run) -> std::process::Child {
    run.command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("llmperf starts")
}

/// The peak RSS (KiB) of one `llmperf` run of `flags` (read until the process ends) and its summary.
fn peak_rss_kib(sim: &SimServer, flags: &str, dir: &str) -> (u64, serde_json::Value) {
    let run = Run::at(sim, "/v1/chat/completions")
        .flags(flags)
        .flags("--duration 2 --max-tokens 2 --log-every-n-query 100000000 --no-test-connection");
    let mut child = spawn_quiet(&run);
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Some(hwm) = status_kib(child.id(), "VmHWM:") {
            peak = peak.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(child.wait().unwrap().success(), "llmperf failed: {flags}");
    (peak, run.run_dir(dir).summary())
}

#[test]
fn peak_rss_does_not_grow_with_number() {
    let sim = bulk_sim(2);
    let cases = [
        ("--prompt hi --parallel 4", "parallel_4_number"),
        ("--prompt hi --open-loop --rate 500", "rate_500.0_number"),
    ];
    for (flags, dir) in cases {
        let mut peaks = Vec::new();
        for number in [10_000u64, 5_000_000] {
            let (peak, summary) = peak_rss_kib(
                &sim,
                &format!("{flags} --number {number}"),
                &format!("{dir}_{number}"),
            );
            let total = summary["Total Requests"].as_u64().unwrap();
            assert!(total > 100, "{flags}: {total} requests");
            assert!(total < number, "{flags}: --duration stopped the run");
            peaks.push(peak);
        }
        let growth_mib = (peaks[1] as f64 - peaks[0] as f64) / 1024.0;
        eprintln!(
            "{flags}: peak RSS {} KiB at --number 10000, {} KiB at --number 5000000 ({growth_mib:+.1} MiB)",
            peaks[0], peaks[1]
        );
        // 4,990,000 more requests: the up-front list would have added 190 MiB.
        assert!(
            growth_mib < 16.0,
            "{flags}: peak RSS grew {growth_mib:.1} MiB"
        );
    }
}

#[test]
fn rss_stays_flat_over_a_long_run() {
    // Long enough that the bounded buffers (8,192 values per percentile column, SQLite's 8 MiB page cache,
    // at most 2,048 records waiting for the store) are full before the first quarter ends, even in a debug
    // build on a loaded machine.
    let send_s = 36.0;
    let sim = bulk_sim(4);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt hi --number 300000")
        .flag("--duration", send_s.to_string())
        .flags("--parallel 16 --max-tokens 4 --log-every-n-query 100000000");
    let mut child = spawn_quiet(&run);
    let pid = child.id();
    // (seconds since the first request, requests received, RSS KiB) while requests are being sent.
    let mut samples: Vec<(f64, u64, u64)> = Vec::new();
    let mut first_request: Option<Instant> = None;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let n = sim.requests_received();
        if n > 1 {
            let t0 = *first_request.get_or_insert_with(Instant::now);
            let at = t0.elapsed().as_secs_f64();
            if at < send_s {
                if let Some(rss) = rss_kib(pid) {
                    samples.push((at, n, rss));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(child.wait().unwrap().success(), "llmperf failed");
    let summary = run.run_dir("parallel_16_number_300000").summary();
    let total = summary["Total Requests"].as_u64().unwrap();
    assert_eq!(summary["Failed Requests"].as_u64(), Some(0));
    assert!(total >= 10_000, "too few requests to judge: {total}");
    let quarter = |lo: f64, hi: f64| -> u64 {
        samples
            .iter()
            .filter(|s| s.0 >= lo * send_s && s.0 < hi * send_s)
            .map(|s| s.2)
            .max()
            .expect("samples in the quarter")
    };
    let (first, last) = (quarter(0.0, 0.25), quarter(0.75, 1.0));
    let growth_pct = (last as f64 - first as f64) * 100.0 / first as f64;
    let in_last: Vec<&(f64, u64, u64)> = samples.iter().filter(|s| s.0 >= 0.75 * send_s).collect();
    eprintln!(
        "{total} requests; RSS max first quarter {first} KiB, last quarter {last} KiB ({growth_pct:+.1} %); \
         requests at the last quarter's start {}",
        in_last.first().map_or(0, |s| s.1)
    );
    assert!(
        growth_pct <= 10.0,
        "RSS grew {growth_pct:.1} % from the first quarter ({first} KiB) to the last ({last} KiB) over {total} requests"
    );
}
