//! Soak and scale benchmark: llmperf itself (in this process, through `llmperf::run`) against the built-in
//! simulator (in a child process, on its own runtime), with this process's memory and file descriptors
//! sampled from `/proc/self` while it runs.
//!
//! 1. Soak: 100,000 streamed requests at `--parallel 1000`: no failure, RSS flat after warm-up, the same
//!    number of open file descriptors before and after. RSS is printed every `--report-every` requests (as
//!    counted by the simulator) while the run goes on, and at the end compared with the RSS after the
//!    first report.
//! 2. Scale: 10,000 streams held open at once for 60 s (`--parallel 10000`, one token every 6 s).
//!
//! Run (release): `cargo run --release --example soak` — or `-- --requests N --report-every K --parallel P
//! --tokens T --ttft-ms A --itl-ms B --streams S --hold-s H [--soak-only]` for other sizes, e.g. the
//! 10-million-request soak: `-- --requests 10000000 --report-every 1000000 --tokens 2 --ttft-ms 0
//! --itl-ms 0 --parallel 64 --soak-only`. The soft `RLIMIT_NOFILE` is raised to the hard limit first; the
//! streams phase needs about one descriptor per stream in each process.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;

/// One `/proc/self` reading.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at_s: f64,
    rss_kib: u64,
    fds: usize,
    /// Requests the simulator had received.
    served: u64,
}

fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// A `/proc/self/status` value in KiB (`VmRSS:`, or `VmHWM:` for the peak so far).
fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns (soft, hard) after.
#[allow(unsafe_code)]
fn raise_nofile() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// Samples this process every `every` until stopped; prints the RSS each time `served` passes a multiple
/// of `report_every` (0: never).
struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    /// `(requests, RSS KiB, seconds)` at each report.
    reports: Arc<Mutex<Vec<(u64, u64, f64)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(every: Duration, served: Arc<AtomicU64>, report_every: u64) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let reports = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r, st) = (samples.clone(), reports.clone(), stop.clone());
        let t0 = Instant::now();
        let base = served.load(Ordering::Relaxed);
        let thread = std::thread::spawn(move || {
            let mut next = report_every;
            while !st.load(Ordering::Relaxed) {
                let sample = Sample {
                    at_s: t0.elapsed().as_secs_f64(),
                    rss_kib: rss_kib(),
                    fds: open_fds(),
                    served: served.load(Ordering::Relaxed) - base,
                };
                s.lock().unwrap().push(sample);
                if report_every > 0 && sample.served >= next {
                    println!(
                        "  requests {:>11}: RSS {:7.1} MiB  ({:.0} s, {:.0} req/s so far)",
                        sample.served,
                        mib(sample.rss_kib),
                        sample.at_s,
                        sample.served as f64 / sample.at_s.max(1e-9)
                    );
                    std::io::stdout().flush().ok();
                    r.lock()
                        .unwrap()
                        .push((sample.served, sample.rss_kib, sample.at_s));
                    next = (sample.served / report_every + 1) * report_every;
                }
                std::thread::sleep(every);
            }
        });
        Sampler {
            samples,
            reports,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> (Vec<Sample>, Vec<(u64, u64, f64)>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let v = self.samples.lock().unwrap().clone();
        let r = self.reports.lock().unwrap().clone();
        (v, r)
    }
}

/// The simulator in a child process (this binary with `--serve`), so its sockets and memory are its own.
struct SimProcess {
    child: Child,
    port: u16,
    /// Requests the simulator has received (it prints the count every 50 ms).
    served: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl SimProcess {
    fn start(ttft_ms: u64, itl_ms: u64, threads: usize) -> SimProcess {
        Self::start_with(ttft_ms, itl_ms, threads, 8)
    }

    fn start_with(ttft_ms: u64, itl_ms: u64, threads: usize, tokens: u64) -> SimProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--serve",
                &ttft_ms.to_string(),
                &itl_ms.to_string(),
                &threads.to_string(),
                &tokens.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the simulator process");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("simulator said {line:?}"));
        let served = Arc::new(AtomicU64::new(0));
        let count = served.clone();
        let reader = std::thread::spawn(move || {
            let mut stdout = stdout;
            let mut line = String::new();
            while matches!(stdout.read_line(&mut line), Ok(n) if n > 0) {
                if let Some(n) = line
                    .trim()
                    .strip_prefix("SERVED ")
                    .and_then(|n| n.parse().ok())
                {
                    count.store(n, Ordering::Relaxed);
                }
                line.clear();
            }
        });
        SimProcess {
            child,
            port,
            served,
            reader: Some(reader),
        }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        // Closing its stdin ends it.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// `--serve TTFT_MS ITL_MS THREADS TOKENS`: run a simulator until stdin closes, printing the requests it
/// has received every 50 ms (`SERVED n`).
fn serve(args: &[String]) {
    raise_nofile();
    let num = |i: usize| args[i].parse::<u64>().expect("a number");
    let sim = llmperf::sim::SimServer::start(llmperf::sim::SimConfig {
        ttft: Duration::from_millis(num(2)),
        itl: Duration::from_millis(num(3)),
        threads: num(4) as usize,
        output_tokens: num(5) as u32,
        record_truth: false,
        ..Default::default()
    })
    .expect("simulator starts");
    println!("PORT {}", sim.addr().port());
    std::io::stdout().flush().unwrap();
    let sim = Arc::new(sim);
    let counter = sim.clone();
    std::thread::spawn(move || loop {
        println!("SERVED {}", counter.requests_received());
        if std::io::stdout().flush().is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    });
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
    drop(sim);
}

/// Runs llmperf in this process; returns the run folder and the wall time.
fn run_llmperf(
    port: u16,
    out: &Path,
    number: u64,
    parallel: u64,
    max_tokens: u64,
) -> (std::path::PathBuf, f64) {
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let (n, p, mt) = (
        number.to_string(),
        parallel.to_string(),
        max_tokens.to_string(),
    );
    let argv = [
        "llmperf",
        "--url",
        &url,
        "--model",
        "soak",
        "--prompt",
        "hello soak test",
        "--number",
        &n,
        "--parallel",
        &p,
        "--max-tokens",
        &mt,
        "--extra-args",
        r#"{"ignore_eos": true}"#,
        "--outputs-dir",
        out.to_str().unwrap(),
        "--no-timestamp",
        "--log-every-n-query",
        "1000000000",
        "--sleep-interval",
        "0",
        // With one token every 6 s the connection test alone would take 18 s.
        "--no-test-connection",
    ];
    let cli = llmperf::cli::Cli::try_parse_from(argv).expect("valid flags");
    let t0 = Instant::now();
    let code = llmperf::run(cli);
    assert_eq!(code, 0, "llmperf failed");
    (
        out.join(format!("soak/parallel_{parallel}_number_{number}")),
        t0.elapsed().as_secs_f64(),
    )
}

fn summary(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("benchmark_summary.json")).unwrap();
    serde_json::from_str(&text.replace("NaN", "null")).unwrap()
}

fn db_counts(run: &Path) -> (i64, i64, f64, f64) {
    let conn = rusqlite::Connection::open(run.join("benchmark_data.db")).unwrap();
    conn.query_row(
        "SELECT count(*), sum(success), min(latency), max(latency) FROM result",
        [],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                r.get::<_, Option<f64>>(3)?.unwrap_or(0.0),
            ))
        },
    )
    .unwrap()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `--name value` from argv, else `default`.
fn opt(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        serve(&args);
        return;
    }
    let requests = opt(&args, "--requests", 100_000);
    let parallel = opt(&args, "--parallel", 1_000);
    let streams = opt(&args, "--streams", 10_000);
    let hold_s = opt(&args, "--hold-s", 60);
    let report_every = opt(&args, "--report-every", (requests / 10).max(1));
    let tokens = opt(&args, "--tokens", 8);
    let ttft_ms = opt(&args, "--ttft-ms", 10);
    let itl_ms = opt(&args, "--itl-ms", 2);
    let soak_only = args.iter().any(|a| a == "--soak-only");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let sim_threads = (cores / 2).max(1);
    let (soft, hard) = raise_nofile();
    let out = tempfile::tempdir().unwrap();
    let mut report = vec![format!(
        "machine: {cores} cores; RLIMIT_NOFILE soft {soft}, hard {hard}; simulator: child process, {sim_threads} thread(s)"
    )];

    // A small first run opens what lives as long as the process (tokio's signal pipe), so the counts
    // below compare like with like.
    {
        let sim = SimProcess::start(1, 1, 1);
        run_llmperf(sim.port, &out.path().join("warm"), 100, 10, 4);
    }

    // ── 1. Soak ────────────────────────────────────────────────────────────────────────────────────────
    {
        let sim = SimProcess::start_with(ttft_ms, itl_ms, sim_threads, tokens);
        let fds_before = open_fds();
        println!(
            "soak: {requests} requests at parallel {parallel} ({tokens} tokens, TTFT {ttft_ms} ms, ITL {itl_ms} ms); \
             RSS every {report_every} requests:"
        );
        let sampler = Sampler::start(Duration::from_millis(100), sim.served.clone(), report_every);
        let (run, wall_s) = run_llmperf(
            sim.port,
            &out.path().join("soak"),
            requests,
            parallel,
            tokens,
        );
        let (samples, reports) = sampler.finish();
        std::thread::sleep(Duration::from_millis(500));
        let fds_after = open_fds();
        let rss_after = rss_kib();
        let peak_kib = status_kib("VmHWM:");
        let s = summary(&run);
        let (rows, ok, _, _) = db_counts(&run);
        let db_bytes = std::fs::metadata(run.join("benchmark_data.db")).map_or(0, |m| m.len());
        // Steady state: from the first report on, while requests were still being sent (the samples after
        // the last request are the summary, the percentiles and the output files).
        let sending: Vec<Sample> = samples
            .iter()
            .copied()
            .filter(|x| x.served < requests)
            .collect();
        let warm = reports.first().map_or(sending.len() / 5, |r| {
            sending.iter().position(|x| x.served >= r.0).unwrap_or(0)
        });
        let steady = &sending[warm.min(sending.len().saturating_sub(1))..];
        let min = steady.iter().map(|s| s.rss_kib).min().unwrap_or(0);
        let max = steady.iter().map(|s| s.rss_kib).max().unwrap_or(0);
        let peak_fds = samples.iter().map(|s| s.fds).max().unwrap_or(0);
        let spread_pct = if min > 0 {
            (max - min) as f64 * 100.0 / min as f64
        } else {
            0.0
        };
        let (first, last) = (steady[0], steady[steady.len() - 1]);
        let growth_b = (last.rss_kib as f64 - first.rss_kib as f64) * 1024.0
            / (last.served.saturating_sub(first.served)).max(1) as f64;
        report.push(format!(
            "soak: {requests} requests at parallel {parallel} ({tokens} tokens, TTFT {ttft_ms} ms, ITL {itl_ms} ms) in {wall_s:.1} s = {:.0} req/s; \
             stored {rows}, succeeded {ok}, summary failed {}; database {:.1} GiB ({:.0} B per request)",
            requests as f64 / wall_s,
            s["Failed Requests"],
            db_bytes as f64 / (1u64 << 30) as f64,
            db_bytes as f64 / requests.max(1) as f64
        ));
        let at: Vec<String> = reports
            .iter()
            .map(|(n, rss, t)| format!("{n}: {:.1} MiB ({t:.0} s)", mib(*rss)))
            .collect();
        report.push(format!("soak RSS at each report: {}", at.join("; ")));
        if let (Some(first_report), Some(end)) = (reports.first(), steady.last()) {
            let change =
                (end.rss_kib as f64 - first_report.1 as f64) * 100.0 / first_report.1 as f64;
            report.push(format!(
                "soak RSS after the first {} requests {:.1} MiB, at the last request sent {:.1} MiB: {change:+.1} % ({})",
                first_report.0,
                mib(first_report.1),
                mib(end.rss_kib),
                if change.abs() <= 10.0 { "within 10 %" } else { "MORE than 10 %" }
            ));
        }
        report.push(format!(
            "soak RSS from the first report to the last request: min {:.1} MiB, max {:.1} MiB, spread {spread_pct:.1} %; \
             {growth_b:.1} B per request; {:.1} MiB after the run (output files written); peak RSS of the process \
             (VmHWM, the percentile merge and the output files included) {:.1} MiB",
            mib(min),
            mib(max),
            mib(rss_after),
            mib(peak_kib)
        ));
        let trace: Vec<String> = samples
            .iter()
            .step_by((samples.len() / 10).max(1))
            .map(|s| format!("{:.0}s:{:.0}MiB/{}fd", s.at_s, mib(s.rss_kib), s.fds))
            .collect();
        report.push(format!("soak RSS/fd trace: {}", trace.join(" ")));
        report.push(format!(
            "soak fds: {fds_before} before, {peak_fds} at peak, {fds_after} after ({})",
            if fds_after <= fds_before {
                "no leak"
            } else {
                "LEAK"
            }
        ));
        assert_eq!(rows as u64, requests);
        assert_eq!(ok as u64, requests, "no failure");
    }

    // ── 2. Scale: streams held open ────────────────────────────────────────────────────────────────────
    if !soak_only {
        let tokens = 11;
        let itl_ms = hold_s * 1000 / (tokens - 1);
        let sim = SimProcess::start(100, itl_ms, sim_threads);
        let fds_before = open_fds();
        let sampler = Sampler::start(Duration::from_millis(500), sim.served.clone(), 0);
        let (run, wall_s) = run_llmperf(
            sim.port,
            &out.path().join("streams"),
            streams,
            streams,
            tokens,
        );
        let (samples, _) = sampler.finish();
        std::thread::sleep(Duration::from_millis(500));
        let fds_after = open_fds();
        let (rows, ok, min_lat, max_lat) = db_counts(&run);
        let peak = samples.iter().max_by_key(|s| s.fds).copied().unwrap();
        // How long at least `streams` sockets were open at once.
        let held: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.fds >= fds_before + streams as usize)
            .collect();
        let held_s = match (held.first(), held.last()) {
            (Some(a), Some(b)) => b.at_s - a.at_s,
            _ => 0.0,
        };
        let peak_rss = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
        report.push(format!(
            "streams: {streams} at once, {tokens} tokens {itl_ms} ms apart: run {wall_s:.1} s; stored {rows}, succeeded {ok}; \
             latency min {min_lat:.1} s, max {max_lat:.1} s"
        ));
        report.push(format!(
            "streams fds: {fds_before} before, {} at peak ({:.0} s in), ≥ {} open for {held_s:.1} s, {fds_after} after; \
             peak RSS {:.1} MiB ({:.1} KiB per stream)",
            peak.fds,
            peak.at_s,
            fds_before + streams as usize,
            mib(peak_rss),
            peak_rss as f64 / streams as f64
        ));
        assert_eq!(ok as u64, streams, "every stream succeeded");
        assert!(
            min_lat >= hold_s as f64,
            "every stream stayed open {hold_s} s"
        );
        drop(sim);
    }

    println!("\n==== llmperf soak figures ====");
    for line in report {
        println!("{line}");
    }
}
