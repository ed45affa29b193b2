//! `--api local_vllm` and `--api local`: start an inference server for `--model` on `127.0.0.1:--port`,
//! wait until it answers, benchmark it, and stop it when llmperf ends (also on Ctrl-C, and if llmperf dies:
//! the child gets SIGTERM when its parent goes).
//!
//! * `local_vllm` starts vLLM exactly as evalscope 1.14.1 does: `python -m vllm.entrypoints.openai.api_server
//!   --model M --served-model-name M --tensor-parallel-size <GPUs> --max-model-len 32768
//!   --gpu-memory-utilization 0.9 --host 0.0.0.0 --port P --trust-remote-code --disable-log-requests
//!   --disable-log-stats` with `VLLM_USE_MODELSCOPE=True`, `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` and
//!   `VLLM_WORKER_MULTIPROC_METHOD=spawn` (`python` is `$LLMPERF_PYTHON`, else `python3`; GPUs counted by
//!   `nvidia-smi -L`, at least 1); `--attn-implementation` picks vLLM's attention backend.
//! * `local`: evalscope starts its own transformers server; llmperf starts the best server it finds for the
//!   model — vLLM when that Python can import it, else llama.cpp's `llama-server` (on `PATH`) for a `.gguf`
//!   model file — and says which.
//!
//! Readiness: `GET /v1/models` answers 200 (polled every 0.5 s, up to `--total-timeout`); a server that
//! exits first is an error with its exit status. Shutdown: SIGTERM, then SIGKILL after 10 s (evalscope's
//! `on_exit`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Error;

mod error;
pub use error::LocalServerError;

/// The evalscope API name that asks for a local server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalApi {
    /// `--api local`: the best server found for the model.
    Local,
    /// `--api local_vllm`: vLLM.
    LocalVllm,
}

/// What to start: from the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSettings {
    /// Which API asked.
    pub api: LocalApi,
    /// `--model`: the model to serve (a hub id or a path; a `.gguf` file for llama.cpp).
    pub model: String,
    /// `--port`.
    pub port: u16,
    /// `--attn-implementation`.
    pub attn_implementation: Option<String>,
}

/// The server program started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// vLLM's OpenAI API server.
    Vllm,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
}

/// The attention implementations `--attn-implementation` takes: every name transformers accepts (evalscope
/// passes the value on to transformers for `--api local`), with vLLM's `VLLM_ATTENTION_BACKEND` (`None`: vLLM has
/// no such backend and keeps its default) and llama.cpp's `--flash-attn` for each.
pub const ATTN_IMPLEMENTATIONS: [(&str, Option<&str>, &str); 5] = [
    ("eager", None, "off"),
    ("sdpa", Some("TORCH_SDPA"), "off"),
    ("flash_attention_2", Some("FLASH_ATTN"), "on"),
    ("flash_attention_3", Some("FLASH_ATTN"), "on"),
    ("flex_attention", Some("FLEX_ATTENTION"), "off"),
];

/// The names of [`ATTN_IMPLEMENTATIONS`], for the flag's value parser.
pub fn attn_implementation_names() -> impl Iterator<Item = &'static str> {
    ATTN_IMPLEMENTATIONS.iter().map(|(name, _, _)| *name)
}

/// The Python that runs vLLM: `$LLMPERF_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("LLMPERF_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Visible NVIDIA GPUs (`nvidia-smi -L`), 0 without the tool.
pub fn gpu_count() -> usize {
    Command::new("nvidia-smi")
        .arg("-L")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or(0, |o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.starts_with("GPU "))
                .count()
        })
}

/// Whether `python -m vllm.entrypoints.openai.api_server` (what both APIs start) can be found: the module
/// spec Python's `-m` looks up, without running it.
fn has_vllm() -> bool {
    Command::new(python())
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm.entrypoints.openai.api_server') is None)",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Which server `settings` starts, or why none can be.
pub fn choose(settings: &LocalSettings) -> Result<ServerKind, LocalServerError> {
    if has_vllm() {
        return Ok(ServerKind::Vllm);
    }
    if settings.api == LocalApi::LocalVllm {
        return Err(LocalServerError::NoVllm { python: python() });
    }
    let gguf = settings.model.ends_with(".gguf") && Path::new(&settings.model).is_file();
    if gguf && on_path("llama-server") {
        return Ok(ServerKind::LlamaCpp);
    }
    Err(LocalServerError::NoServer {
        model: settings.model.clone(),
        python: python(),
        gguf,
    })
}

fn attn(settings: &LocalSettings) -> Option<(Option<&'static str>, &'static str)> {
    let name = settings.attn_implementation.as_deref()?;
    ATTN_IMPLEMENTATIONS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, vllm, llama)| (*vllm, *llama))
}

/// The command that starts `kind` for `settings`.
pub fn command(kind: ServerKind, settings: &LocalSettings) -> Command {
    let port = settings.port.to_string();
    match kind {
        ServerKind::Vllm => {
            let mut cmd = Command::new(python());
            let gpus = gpu_count().max(1).to_string();
            cmd.args(["-m", "vllm.entrypoints.openai.api_server", "--model"])
                .arg(&settings.model)
                .arg("--served-model-name")
                .arg(&settings.model)
                .args(["--tensor-parallel-size", &gpus, "--max-model-len", "32768"])
                .args(["--gpu-memory-utilization", "0.9", "--host", "0.0.0.0"])
                .args(["--port", &port, "--trust-remote-code"])
                .args(["--disable-log-requests", "--disable-log-stats"])
                .env("VLLM_USE_MODELSCOPE", "True")
                .env("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
                .env("VLLM_WORKER_MULTIPROC_METHOD", "spawn");
            if let Some((Some(backend), _)) = attn(settings) {
                cmd.env("VLLM_ATTENTION_BACKEND", backend);
            }
            cmd
        }
        ServerKind::LlamaCpp => {
            let mut cmd = Command::new("llama-server");
            cmd.arg("-m").arg(&settings.model).args([
                "--alias",
                &settings.model,
                "--host",
                "127.0.0.1",
                "--port",
                &port,
            ]);
            if let Some((_, flash)) = attn(settings) {
                cmd.args(["--flash-attn", flash]);
            }
            cmd
        }
    }
}

/// A running local server; dropping it stops the process.
pub struct LocalServer {
    child: Child,
    kind: ServerKind,
}

fn models_ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if s.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

impl LocalServer {
    /// Starts the server for `settings` and waits until `GET /v1/models` answers, at most `timeout`, or
    /// until `stopped_by()` names the signal that interrupted the run.
    pub fn start(
        settings: &LocalSettings,
        timeout: Duration,
        stopped_by: impl Fn() -> Option<i32>,
    ) -> Result<LocalServer, Error> {
        let kind = choose(settings).map_err(Error::usage)?;
        let mut cmd = command(kind, settings);
        crate::sys::process::die_with_parent(&mut cmd);
        cmd.stdin(Stdio::null());
        let name = match kind {
            ServerKind::Vllm => "vLLM",
            ServerKind::LlamaCpp => "llama.cpp (llama-server)",
        };
        tracing::info!(
            "Starting local server, please wait... ({name} for {} on port {})",
            settings.model,
            settings.port
        );
        let child = cmd.spawn().map_err(|e| {
            anyhow::anyhow!("--api {}: cannot start {name}: {e}", api_name(settings))
        })?;
        let mut server = LocalServer { child, kind };
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(anyhow::anyhow!(
                    "--api {}: the {name} server exited before it was ready ({status})",
                    api_name(settings)
                )
                .into());
            }
            if models_ready(settings.port) {
                tracing::info!(
                    "Local {name} server ready on port {} after {:.1} s",
                    settings.port,
                    t0.elapsed().as_secs_f64()
                );
                return Ok(server);
            }
            if let Some(signal) = stopped_by() {
                return Err(Error::Interrupted { signal });
            }
            if t0.elapsed() > timeout {
                return Err(anyhow::anyhow!(
                    "--api {}: the {name} server did not answer GET /v1/models on port {} within {} s (--total-timeout)",
                    api_name(settings),
                    settings.port,
                    timeout.as_secs()
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The server program.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }
}

fn api_name(settings: &LocalSettings) -> &'static str {
    match settings.api {
        LocalApi::Local => "local",
        LocalApi::LocalVllm => "local_vllm",
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            tracing::info!("Child process has already terminated.");
            return;
        }
        tracing::info!("Terminating the child process...");
        // SIGTERM first, as evalscope's proc.terminate().
        crate::sys::process::terminate(&self.child);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                tracing::info!("Child process terminated.");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::warn!(
            "Child process did not terminate within the timeout, killing it forcefully..."
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(attn: &str) -> LocalSettings {
        LocalSettings {
            api: LocalApi::Local,
            model: "m.gguf".into(),
            port: 8877,
            attn_implementation: Some(attn.into()),
        }
    }

    fn env(cmd: &Command, key: &str) -> Option<String> {
        cmd.get_envs()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    }

    fn flash_attn(cmd: &Command) -> Option<String> {
        let args: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let i = args.iter().position(|a| a == "--flash-attn")?;
        args.get(i + 1).cloned()
    }

    #[test]
    fn every_transformers_attention_name_maps_to_the_servers_setting() {
        let cases = [
            ("eager", None, "off"),
            ("sdpa", Some("TORCH_SDPA"), "off"),
            ("flash_attention_2", Some("FLASH_ATTN"), "on"),
            ("flash_attention_3", Some("FLASH_ATTN"), "on"),
            ("flex_attention", Some("FLEX_ATTENTION"), "off"),
        ];
        assert_eq!(cases.len(), ATTN_IMPLEMENTATIONS.len());
        for (name, backend, flash) in cases {
            let vllm = command(ServerKind::Vllm, &settings(name));
            assert_eq!(
                env(&vllm, "VLLM_ATTENTION_BACKEND").as_deref(),
                backend,
                "{name}"
            );
            let llama = command(ServerKind::LlamaCpp, &settings(name));
            assert_eq!(flash_attn(&llama).as_deref(), Some(flash), "{name}");
        }
    }
}
