//! The two helper processes the benchmark starts by running its own executable again:
//!
//! * `serve-sim`: the built-in simulator alone in a process of its own (so it never shares the client's
//!   runtime, threads or CPU accounting). It prints its port, serves until its stdin closes, then writes
//!   its ground truth as JSON Lines and prints its own CPU time. With `--rt` it asks for real-time
//!   scheduling (SCHED_FIFO, inherited by its threads) where allowed: the simulator is the reference clock,
//!   and on a shared machine other processes would otherwise delay its reads and writes by milliseconds.
//! * `client`: llmperf itself, exactly as the `llmperf` binary runs it (`llmperf::run` on the parsed flags),
//!   which then writes its process CPU time and peak RSS to a stats file.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use llmperf::sim::{SimConfig, SimServer, TruthRecord};

/// How the simulator process behaves.
#[derive(Debug, Clone, Copy)]
pub struct SimSpec {
    pub ttft_ms: f64,
    pub itl_ms: f64,
    pub tokens: u32,
    pub threads: usize,
    pub truth: bool,
    /// Ask for real-time scheduling.
    pub rt: bool,
}

/// Puts thread `tid` (0: the calling thread) under SCHED_FIFO at `priority`; false where not allowed.
#[allow(unsafe_code)]
pub fn set_fifo(tid: i32, priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; the call only changes a thread's scheduling policy.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) == 0 }
}

/// A running simulator process.
pub struct SimProcess {
    child: Child,
    stdout: BufReader<ChildStdout>,
    port: u16,
    truth_path: Option<PathBuf>,
    /// The simulator runs under SCHED_FIFO.
    pub rt: bool,
}

impl SimProcess {
    /// Starts `serve-sim` and waits until it listens.
    pub fn spawn(spec: SimSpec, dir: &Path) -> SimProcess {
        let truth_path = spec.truth.then(|| dir.join("truth.jsonl"));
        let mut child = Command::new(std::env::current_exe().expect("own executable"))
            .arg("serve-sim")
            .args(["--ttft-ms", &spec.ttft_ms.to_string()])
            .args(["--itl-ms", &spec.itl_ms.to_string()])
            .args(["--tokens", &spec.tokens.to_string()])
            .args(["--threads", &spec.threads.to_string()])
            .args(spec.rt.then_some("--rt"))
            .args(
                truth_path
                    .iter()
                    .flat_map(|p| ["--truth".to_string(), p.display().to_string()]),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the simulator process");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("simulator port");
        let mut words = line.split_whitespace();
        let port = words
            .next()
            .and_then(|p| p.parse().ok())
            .expect("simulator prints its port");
        let rt = words.next() == Some("rt");
        SimProcess {
            child,
            stdout,
            port,
            truth_path,
            rt,
        }
    }

    /// The chat completions URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/chat/completions", self.port)
    }

    /// Stops the simulator; returns its ground truth (empty unless asked for) and its CPU seconds.
    pub fn finish(mut self) -> (Vec<TruthRecord>, f64) {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        self.stdout
            .read_to_string(&mut rest)
            .expect("simulator output");
        let _ = self.child.wait();
        let cpu_s = rest
            .lines()
            .find_map(|l| l.strip_prefix("cpu_s "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(f64::NAN);
        let truth = self
            .truth_path
            .map(|p| {
                std::fs::read_to_string(&p)
                    .expect("truth file")
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("truth line"))
                    .collect()
            })
            .unwrap_or_default();
        (truth, cpu_s)
    }
}

#[derive(Parser)]
struct ServeArgs {
    #[arg(long)]
    ttft_ms: f64,
    #[arg(long)]
    itl_ms: f64,
    #[arg(long)]
    tokens: u32,
    #[arg(long)]
    threads: usize,
    #[arg(long)]
    truth: Option<PathBuf>,
    #[arg(long)]
    rt: bool,
    /// Capacity model: batch slots (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    max_batch: u32,
    /// Capacity model: prefill tokens/s (0 = none).
    #[arg(long, default_value_t = 0)]
    prefill_tok_per_s: u64,
    /// Capacity model: decode tokens/s shared by the batch (0 = none).
    #[arg(long, default_value_t = 0)]
    decode_tok_per_s: u64,
    /// Report repeated prompt prefixes as `cached_tokens` (multi-turn goldens).
    #[arg(long)]
    prefix_cache: bool,
}

/// `serve-sim`: runs the simulator until stdin closes.
pub fn serve_sim(args: &[String]) {
    let a =
        ServeArgs::parse_from(std::iter::once("serve-sim".to_string()).chain(args.iter().cloned()));
    llmperf::clock::init();
    if let Err(e) = llmperf::resources::ensure_file_limit(20_000) {
        eprintln!("simulator: {e}");
    }
    // Set before the simulator's threads start, so they inherit it.
    let rt = a.rt && set_fifo(0, 5);
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_secs_f64(a.ttft_ms / 1000.0),
        itl: Duration::from_secs_f64(a.itl_ms / 1000.0),
        output_tokens: a.tokens,
        threads: a.threads,
        record_truth: a.truth.is_some(),
        max_batch: a.max_batch,
        prefill_tok_per_s: a.prefill_tok_per_s,
        decode_tok_per_s: a.decode_tok_per_s,
        prefix_cache: a.prefix_cache,
        ..SimConfig::default()
    })
    .expect("simulator starts");
    println!("{} {}", sim.addr().port(), if rt { "rt" } else { "normal" });
    std::io::stdout().flush().expect("stdout");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let truth = sim.truth();
    sim.shutdown();
    if let Some(path) = a.truth {
        llmperf::sim::write_truth_jsonl(&truth, &path).expect("write truth");
    }
    println!("cpu_s {}", llmperf::resources::process_cpu().as_secs_f64());
}

/// What a client process reports.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct ClientStats {
    pub exit_code: i32,
    pub cpu_s: f64,
    pub max_rss_bytes: u64,
    pub wall_s: f64,
}

/// Runs llmperf with `args` in a process of its own, writing under `dir` (log in `dir/client.log`).
pub fn run_client(args: &[String], dir: &Path) -> ClientStats {
    run_client_with(args, dir, false).0
}

/// As [`run_client`]; with `rt_dispatch`, the open-loop dispatcher thread of the client (and only it) is
/// put under SCHED_FIFO once it starts, where allowed. Returns whether that happened.
pub fn run_client_with(args: &[String], dir: &Path, rt_dispatch: bool) -> (ClientStats, bool) {
    let stats = dir.join("client_stats.json");
    let log = std::fs::File::create(dir.join("client.log")).expect("client log");
    let mut child = Command::new(std::env::current_exe().expect("own executable"))
        .arg("client")
        .arg(&stats)
        .args(args)
        .args(["--outputs-dir", &dir.join("out").display().to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start the client process");
    let mut boosted = false;
    if rt_dispatch {
        let tasks = PathBuf::from(format!("/proc/{}/task", child.id()));
        while !boosted && matches!(child.try_wait(), Ok(None)) {
            for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                if comm.trim() == "llmperf-dispatc" {
                    let tid = task.file_name().to_string_lossy().parse().unwrap_or(0);
                    boosted = tid > 0 && set_fifo(tid, 5);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let status = child.wait().expect("client process");
    let text = std::fs::read_to_string(&stats).unwrap_or_else(|_| {
        panic!(
            "the client process failed ({status}); see {}",
            dir.join("client.log").display()
        )
    });
    (serde_json::from_str(&text).expect("client stats"), boosted)
}

/// `client STATS ARGS…`: llmperf as the binary runs it, then its own stats into STATS.
pub fn client(args: &[String]) {
    let (stats, rest) = args.split_first().expect("client STATS ARGS…");
    let started = Instant::now();
    let cli = llmperf::cli::Cli::parse_from(
        std::iter::once("llmperf".to_string()).chain(rest.iter().cloned()),
    );
    let exit_code = llmperf::run(cli);
    let out = ClientStats {
        exit_code,
        cpu_s: llmperf::resources::process_cpu().as_secs_f64(),
        max_rss_bytes: llmperf::resources::peak_rss_bytes(),
        wall_s: started.elapsed().as_secs_f64(),
    };
    std::fs::write(stats, serde_json::to_string(&out).expect("json")).expect("write stats");
}

/// The one `benchmark_data.db` (and its run directory) under `dir`.
pub fn run_dir(dir: &Path) -> PathBuf {
    fn find(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let p = entry.path();
            if p.is_dir() {
                if let Some(found) = find(&p) {
                    return Some(found);
                }
            } else if p.file_name().is_some_and(|n| n == "benchmark_data.db") {
                return p.parent().map(Path::to_path_buf);
            }
        }
        None
    }
    find(dir).unwrap_or_else(|| panic!("no benchmark_data.db under {}", dir.display()))
}

/// `benchmark_summary.json` of the run under `dir`.
pub fn summary(dir: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(run_dir(dir).join("benchmark_summary.json")).expect("summary");
    serde_json::from_str(&text.replace("NaN", "null")).expect("summary json")
}

/// How the client is watched while it runs (the `live` section): `--ui dashboard` in a pseudo-terminal
/// of 120×40 (drawn every 250 ms, its output read and dropped, as a terminal would), and `--metrics-listen`
/// scraped every 100 ms (ten times a second: far more often than Prometheus scrapes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watch {
    pub dashboard: bool,
    pub endpoint: bool,
}

impl Watch {
    /// Runs llmperf with `args` as [`run_client`] does, watched; returns its stats and the good scrapes.
    pub fn run(&self, args: &[String], dir: &Path) -> (ClientStats, u64) {
        let mut args = args.to_vec();
        if self.dashboard {
            args.extend(["--ui".into(), "dashboard".into()]);
        }
        let port = self.endpoint.then(|| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            args.extend(["--metrics-listen".into(), port.to_string()]);
            port
        });
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let scraper = port.map(|port| {
            let stop = stop.clone();
            std::thread::spawn(move || scrape_until(port, &stop))
        });
        let stats = if self.dashboard {
            run_client_in_pty(&args, dir)
        } else {
            run_client(&args, dir)
        };
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let scrapes = scraper.map_or(0, |t| t.join().expect("scraper"));
        (stats, scrapes)
    }
}

/// GETs `/metrics` every 100 ms until `stop`; the number of good answers.
fn scrape_until(port: u16, stop: &std::sync::atomic::AtomicBool) -> u64 {
    let mut good = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(
                s,
                "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut reply = Vec::new();
            if s.read_to_end(&mut reply).is_ok() && reply.starts_with(b"HTTP/1.1 200") {
                good += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    good
}

/// A pseudo-terminal of `cols`×`rows`: (master, slave).
#[allow(unsafe_code)]
fn open_pty(cols: u16, rows: u16) -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: valid out-pointers for the two descriptors, no name buffer, default terminal settings.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two new descriptors that nothing else owns.
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// As [`run_client`], with the client's stdin, stdout and stderr on a pseudo-terminal of its own (its
/// controlling terminal), whose output is read as it comes and written to `dir/client.log`.
#[allow(unsafe_code)]
pub fn run_client_in_pty(args: &[String], dir: &Path) -> ClientStats {
    use std::os::unix::process::CommandExt;
    let stats = dir.join("client_stats.json");
    let (master, slave) = open_pty(120, 40);
    let mut cmd = Command::new(std::env::current_exe().expect("own executable"));
    cmd.arg("client")
        .arg(&stats)
        .args(args)
        .args(["--outputs-dir", &dir.join("out").display().to_string()])
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid and ioctl are async-signal-safe; they make the pty (stdin) the child's terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start the client process");
    // The command holds copies of the terminal's descriptors: closed here, so the reads below end with
    // the child.
    drop(cmd);
    let mut log = std::fs::File::create(dir.join("client.log")).expect("client log");
    let mut reader = std::fs::File::from(master);
    let drain = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        // Reads end with EIO once the child and its descendants have closed the terminal.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || log.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let status = child.wait().expect("client process");
    let _ = drain.join();
    let text = std::fs::read_to_string(&stats).unwrap_or_else(|_| {
        panic!(
            "the client process failed ({status}); see {}",
            dir.join("client.log").display()
        )
    });
    serde_json::from_str(&text).expect("client stats")
}
