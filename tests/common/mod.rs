//! Helpers shared by the test suites (`tests/cli`, the simulator; `tests/e2e`, a real server): run the
//! binary, find the output tree, read the database. Most tests go through the [`Run`] builder (`run.rs`):
//! one `llmperf` invocation in a fresh output folder, and the run folders it wrote.

pub mod fake_hub;
pub mod parquet;
pub mod run;
pub mod stub;
pub mod tls;

pub use run::{Run, RunDir};
pub use stub::{Reply, StubServer};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::Value;

/// A fast simulator: 2 ms to first token, 1 ms between tokens.
pub fn fast_sim() -> SimServer {
    timed_sim(2, 1)
}

/// A simulator for long runs: no delay, `output_tokens` per reply, and nothing kept per request (no
/// ground-truth records), so its memory stays flat however many requests it serves.
pub fn bulk_sim(output_tokens: u32) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        output_tokens,
        record_truth: false,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// A simulator with `ttft_ms` to the first token and `itl_ms` between tokens, the rest its defaults.
pub fn timed_sim(ttft_ms: u64, itl_ms: u64) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// The `llmperf` command with `args`, writing under `out`, not pausing between runs. Hub downloads are off
/// (tests never reach the internet; a test that serves a fake hub removes `HF_HUB_OFFLINE`), and the
/// ModelScope endpoint is a closed local port unless the test points it at a fake hub.
pub fn llmperf_command(out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmperf"));
    cmd.env("HF_HUB_OFFLINE", "1");
    cmd.env("MODELSCOPE_ENDPOINT", "http://127.0.0.1:9");
    cmd.args(args).args([
        "--outputs-dir",
        out.to_str().unwrap(),
        "--sleep-interval",
        "0",
    ]);
    cmd
}

/// Sends `sig` to `child`, a process this test started and has not reaped.
#[allow(unsafe_code)]
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid (not yet reaped, so it cannot have been reused).
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

/// Starts `llmperf serve-mock <args> --until-stdin-closes`, the simulator in a process of its own, and
/// returns the process and the `http://127.0.0.1:PORT/v1` it printed; closing its stdin stops it.
pub fn serve_mock(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .arg("serve-mock")
        .args(args)
        .arg("--until-stdin-closes")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("llmperf serve-mock starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

/// `llmperf` with `args`, writing under `out`.
pub fn llmperf(out: &Path, args: &[&str]) -> Output {
    llmperf_env(out, args, &[])
}

/// `llmperf` with `args` and extra environment variables, writing under `out`.
pub fn llmperf_env(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    llmperf_command(out, args)
        .envs(env.iter().copied())
        .output()
        .expect("llmperf runs")
}

/// What a process wrote to stderr, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What a process wrote to stdout, as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "llmperf failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The only `<timestamp>/<name>` run root under `out`.
pub fn run_root(out: &Path, name: &str) -> PathBuf {
    let stamps: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stamps.len(), 1, "one timestamp folder: {stamps:?}");
    let stamp = stamps[0].file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(stamp.len(), 15, "YYYYmmdd_HHMMSS: {stamp}");
    assert_eq!(&stamp[8..9], "_");
    stamps[0].join(name)
}

/// Every file under `dir`, recursively (none when `dir` does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Parses a JSON file.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text.replace("NaN", "null")).unwrap()
}

/// One stored row, the columns the tests look at.
#[derive(Debug, Clone)]
pub struct Row {
    pub request: String,
    pub start_time: f64,
    pub completed_time: f64,
    pub success: bool,
    pub latency: Option<f64>,
    pub ttft: Option<f64>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub tpot: Option<f64>,
    pub itl: Vec<f64>,
    pub is_stream: bool,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub send_time: Option<f64>,
    pub scheduled_time: Option<f64>,
    pub chunk_times: Vec<f64>,
}

/// The delivered load recounted from stored rows, the slow obvious way (a reference for the load
/// verdict's keys): `(time-weighted mean in flight over the send window, most in flight at a send,
/// sends per second over the send window)`.
pub fn load_recount(rows: &[Row]) -> (f64, usize, f64) {
    let first = rows.iter().map(|r| r.start_time).fold(f64::MAX, f64::min);
    let last = rows.iter().map(|r| r.start_time).fold(f64::MIN, f64::max);
    let area: f64 = rows
        .iter()
        .map(|r| (r.completed_time.min(last) - r.start_time.max(first)).max(0.0))
        .sum();
    let max = rows
        .iter()
        .map(|a| {
            rows.iter()
                .filter(|b| b.start_time <= a.start_time && b.completed_time > a.start_time)
                .count()
        })
        .max()
        .unwrap();
    (
        area / (last - first),
        max,
        (rows.len() - 1) as f64 / (last - first),
    )
}

/// Every row of `result`, in insertion order.
pub fn rows(db: &Path) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT request, start_time, completed_time, success, latency, first_chunk_latency, prompt_tokens,
                    completion_tokens, time_per_output_token, inter_token_latencies, is_stream, status_code, error,
                    send_time, scheduled_time, chunk_times FROM result ORDER BY rowid",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let itl: String = r.get(9)?;
            let chunks: Option<String> = r.get(15)?;
            Ok(Row {
                request: r.get(0)?,
                start_time: r.get(1)?,
                completed_time: r.get(2)?,
                success: r.get::<_, i64>(3)? == 1,
                latency: r.get(4)?,
                ttft: r.get(5)?,
                prompt_tokens: r.get(6)?,
                completion_tokens: r.get(7)?,
                tpot: r.get(8)?,
                itl: serde_json::from_str(&itl).unwrap(),
                is_stream: r.get::<_, i64>(10)? == 1,
                status_code: r.get(11)?,
                error: r.get(12)?,
                send_time: r.get(13)?,
                scheduled_time: r.get(14)?,
                chunk_times: chunks
                    .map(|c| serde_json::from_str(&c).unwrap())
                    .unwrap_or_default(),
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// Column names of `result`, in order.
pub fn columns(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("PRAGMA table_info(result)").unwrap();
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    names
}

/// Python's `round(v, n)` (the correctly rounded decimal), as the summary uses.
pub fn py_round(v: f64, n: usize) -> f64 {
    format!("{v:.n$}").parse().unwrap()
}
