//! Helpers shared by the test suites (`tests/cli`, the simulator; `tests/e2e`, a real server): run the
//! binary (a [`Run`] builder for the common shape: a server, `--model m`, a fresh output folder), find the
//! output tree, read the database.

pub mod fake_hub;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::Value;

/// A fast simulator: 2 ms to first token, 1 ms between tokens.
pub fn fast_sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
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

/// One `llmperf` invocation against a server (`--url <server>/v1 --model m`, plus what the test adds),
/// writing under a fresh temporary folder that lives as long as the `Run`.
pub struct Run {
    out: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Run {
    /// A run against the simulator `sim`.
    pub fn against(sim: &SimServer) -> Run {
        Run::with_url(&format!("{}/v1", sim.base_url()))
    }

    /// A run against `url` with `--model m`.
    pub fn with_url(url: &str) -> Run {
        Run {
            out: tempfile::tempdir().expect("temporary folder"),
            args: ["--url", url, "--model", "m"].map(String::from).to_vec(),
            env: Vec::new(),
        }
    }

    /// Adds flags.
    pub fn args(mut self, args: &[&str]) -> Run {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, key: &str, value: &str) -> Run {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The folder the results go under (`--outputs-dir`).
    pub fn out(&self) -> &Path {
        self.out.path()
    }

    /// Runs it and returns what it printed and its exit status.
    pub fn output(&self) -> Output {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        llmperf_env(self.out.path(), &args, &env)
    }

    /// Runs it, asserts success and returns stdout.
    pub fn ok(&self) -> String {
        ok(&self.output())
    }

    /// The run folder `dir_name` (`parallel_1_number_2`) of model `m` under the one timestamp folder.
    pub fn run_dir(&self, dir_name: &str) -> PathBuf {
        run_root(self.out.path(), "m").join(dir_name)
    }
}
