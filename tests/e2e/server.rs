//! A real llama.cpp server (SmolLM2-135M-Instruct, from PyPI) for the end-to-end tests: started on a free
//! loopback port, ready once `/health` and `/v1/models` answer, stopped when the guard drops (also when a
//! test panics) or when the test process dies (the script watches its parent).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::common::{signal, Run};

/// The model alias the server answers to.
pub const MODEL: &str = "SmolLM2-135M-Instruct";

/// One real server at a time: the model runs on one core of a small machine.
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A running server; dropping it stops the process.
pub struct RealServer {
    child: Child,
    port: u16,
    _turn: MutexGuard<'static, ()>,
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python of the virtual environment that has xllamacpp, or `None` (with the reason) when absent.
pub fn python() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("LLMPERF_LLAMA_PYTHON") {
        return Ok(PathBuf::from(p));
    }
    let venv = std::env::var("LLMPERF_LLAMA_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join(".venv-llama"));
    let py = venv.join("bin/python");
    if py.is_file() {
        Ok(py)
    } else {
        Err(format!(
            "{} not found: run scripts/setup_real_server.sh",
            py.display()
        ))
    }
}

fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.starts_with("HTTP/1.1 200").then_some(out)
}

impl RealServer {
    /// Starts a server (`embedding` serves `/v1/embeddings` instead of generation). Returns `None` when the
    /// server is not installed and this is not CI (a note is printed); in CI a missing server fails.
    pub fn start(embedding: bool) -> Option<RealServer> {
        let args: &[&str] = if embedding { &["--embedding"] } else { &[] };
        RealServer::start_with(args)
    }

    /// Starts a server with extra `scripts/llama_server.py` arguments (`--chat-template-file PATH`, …);
    /// `None` as [`RealServer::start`].
    pub fn start_with(extra: &[&str]) -> Option<RealServer> {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let py = match python() {
            Ok(p) => p,
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("real server required in CI: {why}")
            }
            Err(why) => {
                eprintln!("note: skipping a real-server test: {why}");
                return None;
            }
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = Command::new(py);
        cmd.arg(repo().join("scripts/llama_server.py"))
            .args(["--port", &port.to_string(), "--exit-with-parent"])
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd.args(extra);
        let child = cmd.spawn().expect("start scripts/llama_server.py");
        let mut server = RealServer {
            child,
            port,
            _turn: turn,
        };
        let t0 = Instant::now();
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("the llama.cpp server exited early: {status}");
            }
            let health = get(port, "/health").is_some_and(|b| b.contains("\"ok\""));
            if health && get(port, "/v1/models").is_some_and(|b| b.contains(MODEL)) {
                return Some(server);
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "the llama.cpp server did not become ready"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn v1(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// A run against this server: `--url http://127.0.0.1:PORT/v1 --model <MODEL>`.
    pub fn run(&self) -> Run {
        Run::with_url(&self.v1()).model(MODEL)
    }

    /// A run against `path` under `/v1` (`/chat/completions`) with `--model <MODEL>`.
    pub fn run_at(&self, path: &str) -> Run {
        Run::with_url(&format!("{}{path}", self.v1())).model(MODEL)
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        signal(&self.child, libc::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
