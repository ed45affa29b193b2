//! Flat memory: the `llmperf` process (its own process; the simulator runs in this one) keeps its RSS flat
//! over a long run of tiny streamed requests — exact percentiles, the client diagnostics and the workload
//! timeline spill to disk instead of growing in memory. The RSS once the bounded buffers are full and at the
//! end of the run (windows counted in requests sent, so a loaded machine compares the same stretches) must
//! be within 10 %. And the request list is produced lazily: the peak RSS of a
//! run does not grow with `--number` (a run of 5 M requests stopped by `--duration` peaks where one of
//! 10,000 does; the up-front list was 40 B a request, 200 MB here).

use std::time::Duration;

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
    // Compared by requests sent, not by time, so a loaded machine (fewer requests per second) compares the
    // same stretches: the bounded buffers (8,192 values per percentile column, SQLite's 8 MiB page cache, at
    // most 2,048 records waiting for the store) are full after 12,000 requests; from there to 16,500 is the
    // first window, the last 4,500 of 30,000 the second.
    let number = 30_000u64;
    let (first_window, last_window) = ((12_000, 16_500), (number - 4_500, number));
    let sim = bulk_sim(4);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flag("--number", number.to_string())
        .flags("--prompt hi --parallel 16 --max-tokens 4 --log-every-n-query 100000000");
    let mut child = spawn_quiet(&run);
    let pid = child.id();
    // (requests received, RSS KiB) while requests are being sent.
    let mut samples: Vec<(u64, u64)> = Vec::new();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let n = sim.requests_received();
        if n > 1 && n < number {
            if let Some(rss) = rss_kib(pid) {
                samples.push((n, rss));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(child.wait().unwrap().success(), "llmperf failed");
    let summary = run.run_dir("parallel_16_number_30000").summary();
    assert_eq!(summary["Total Requests"].as_u64(), Some(number));
    assert_eq!(summary["Failed Requests"].as_u64(), Some(0));
    let window = |(lo, hi): (u64, u64)| -> u64 {
        samples
            .iter()
            .filter(|s| s.0 >= lo && s.0 < hi)
            .map(|s| s.1)
            .max()
            .unwrap_or_else(|| panic!("no RSS sample between requests {lo} and {hi}"))
    };
    let (first, last) = (window(first_window), window(last_window));
    let growth_pct = (last as f64 - first as f64) * 100.0 / first as f64;
    eprintln!(
        "{number} requests, {} samples; RSS max at requests {first_window:?}: {first} KiB, at {last_window:?}: {last} KiB ({growth_pct:+.1} %)",
        samples.len()
    );
    assert!(
        growth_pct <= 10.0,
        "RSS grew {growth_pct:.1} % from requests {first_window:?} ({first} KiB) to {last_window:?} ({last} KiB)"
    );
}
