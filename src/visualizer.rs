//! `--visualizer wandb|swanlab|clearml`: logs to an experiment tracker through its real Python SDK.
//!
//! llmperf writes the bridge script (`python/llmperf_visualizer_bridge.py`, embedded in the binary) to a
//! temporary file and runs it with `python3` (or `$LLMPERF_PYTHON`). The bridge imports the SDK first; if it
//! cannot, llmperf stops before creating anything, with the install hint (exit code 1, as evalscope's
//! `RuntimeError`). Then it initialises the tracker (project `perf_benchmark`, run name `--name` or
//! `<model_id>_<YYYYmmdd_HHMMSS>`, config = the masked arguments), receives evalscope's running metrics
//! message after every measured request (what evalscope passes to `wandb.log`), each run's summary, and
//! finally `finish`. Protocol: JSON lines (see the script).
//!
//! API keys go to the child only through its environment (`LLMPERF_WANDB_API_KEY`,
//! `LLMPERF_SWANLAB_API_KEY`); they are never written to a file, a message or a log. Per-request messages
//! go through a bounded queue to a writer thread, so a slow tracker never slows the aggregator: when the
//! queue is full a message is skipped and counted (a warning at the end says how many).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};

/// The bridge script, shipped inside the binary.
pub const BRIDGE_SCRIPT: &str = include_str!("../python/llmperf_visualizer_bridge.py");

/// Per-request messages that may wait for the bridge before new ones are skipped.
const QUEUE_CAPACITY: usize = 65_536;
/// How long the SDK import, the tracker's initialisation and its final upload may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(300);

/// The tracker to log to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisualizerKind {
    /// Weights & Biases (`wandb`).
    Wandb,
    /// SwanLab (`swanlab`).
    Swanlab,
    /// ClearML (`clearml`).
    Clearml,
}

impl VisualizerKind {
    /// The `--visualizer` value, which is also the Python package name.
    pub fn name(self) -> &'static str {
        match self {
            VisualizerKind::Wandb => "wandb",
            VisualizerKind::Swanlab => "swanlab",
            VisualizerKind::Clearml => "clearml",
        }
    }

    /// Parses a `--visualizer` value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "wandb" => Some(VisualizerKind::Wandb),
            "swanlab" => Some(VisualizerKind::Swanlab),
            "clearml" => Some(VisualizerKind::Clearml),
            _ => None,
        }
    }
}

/// The validated visualizer settings.
#[derive(Clone, PartialEq, Eq)]
pub struct VisualizerSettings {
    /// The tracker.
    pub kind: VisualizerKind,
    /// `--wandb-api-key` (deprecated; `WANDB_API_KEY` in the environment also works).
    pub wandb_api_key: Option<String>,
    /// `--swanlab-api-key` (deprecated; `local` selects SwanLab's local mode).
    pub swanlab_api_key: Option<String>,
    /// `--swanlab-host`.
    pub swanlab_host: Option<String>,
    /// The tracker was implied by a deprecated `--*-api-key` flag rather than named by `--visualizer`.
    pub implied_by_key: bool,
}

impl std::fmt::Debug for VisualizerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mask = |k: &Option<String>| k.as_ref().map(|_| crate::secret::MASK);
        f.debug_struct("VisualizerSettings")
            .field("kind", &self.kind)
            .field("wandb_api_key", &mask(&self.wandb_api_key))
            .field("swanlab_api_key", &mask(&self.swanlab_api_key))
            .field("swanlab_host", &self.swanlab_host)
            .field("implied_by_key", &self.implied_by_key)
            .finish()
    }
}

/// A running bridge process.
pub struct Visualizer {
    kind: VisualizerKind,
    child: Child,
    events: mpsc::Receiver<Value>,
    writer: Option<Writer>,
    // Keeps the script file alive as long as the child may read it.
    _script: ScriptFile,
}

/// The bridge script written to the temporary folder; removed when dropped.
struct ScriptFile(PathBuf);

impl ScriptFile {
    fn write() -> std::io::Result<ScriptFile> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "llmperf_visualizer_bridge_{}_{nanos}.py",
            std::process::id()
        );
        let path = std::env::temp_dir().join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        f.write_all(BRIDGE_SCRIPT.as_bytes())?;
        Ok(ScriptFile(path))
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

struct Writer {
    tx: mpsc::SyncSender<String>,
    thread: JoinHandle<()>,
    skipped: Arc<AtomicU64>,
}

/// The per-request end of the queue: cheap to clone, never blocks.
#[derive(Clone)]
pub struct VisualizerFeed {
    tx: mpsc::SyncSender<String>,
    skipped: Arc<AtomicU64>,
}

impl VisualizerFeed {
    /// Queues one running metrics message (a JSON object text); skips it when the queue is full.
    pub fn log(&self, message_json: &str) {
        let line = format!("{{\"type\": \"log\", \"data\": {message_json}}}");
        if self.tx.try_send(line).is_err() {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl VisualizerFeed {
    /// Queues one run's summary (the run's summary file text); waits for room, never skips it.
    pub fn summary(&self, run: &str, summary_json: &str) {
        // One line: JSON strings escape their newlines, so every raw newline is indentation.
        let summary_json = summary_json.replace('\n', "");
        let line = format!(
            "{{\"type\": \"summary\", \"run\": {}, \"data\": {summary_json}}}",
            json!(run)
        );
        let _ = self.tx.send(line);
    }
}

fn python() -> String {
    std::env::var("LLMPERF_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

impl Visualizer {
    /// Starts the bridge and waits until it has imported the SDK. Fails, naming the flag and the install
    /// command, when Python or the SDK is missing.
    pub fn spawn(settings: &VisualizerSettings) -> Result<Visualizer> {
        let kind = settings.kind;
        let flag = format!("--visualizer {}", kind.name());
        let script = ScriptFile::write().context("writing the visualizer bridge script")?;
        let python = python();
        let mut cmd = Command::new(&python);
        cmd.arg(&script.0)
            .arg(kind.name())
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONIOENCODING", "utf-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (var, value) in [
            ("LLMPERF_WANDB_API_KEY", &settings.wandb_api_key),
            ("LLMPERF_SWANLAB_API_KEY", &settings.swanlab_api_key),
            ("LLMPERF_SWANLAB_HOST", &settings.swanlab_host),
        ] {
            match value {
                Some(v) => cmd.env(var, v),
                None => cmd.env_remove(var),
            };
        }
        let mut child = cmd.spawn().map_err(|e| {
            anyhow!(
                "{flag} needs Python 3 with the {pkg} package, but `{python}` cannot be started ({e}). \
                 Install Python 3 and run: pip install {pkg} (or set LLMPERF_PYTHON to an interpreter that has it)",
                pkg = kind.name()
            )
        })?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (events_tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let event = serde_json::from_str(&line).unwrap_or_else(|_| json!({"text": line}));
                if events_tx.send(event).is_err() {
                    break;
                }
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !line.trim().is_empty() {
                    tracing::info!("[{}] {}", "visualizer", line);
                }
            }
        });
        let mut vis = Visualizer {
            kind,
            child,
            events,
            writer: None,
            _script: script,
        };
        vis.expect_event("imported", "import").map_err(|e| {
            anyhow!(
                "{flag}: {e:#}. Install it with: pip install {pkg} (Python: {python}; set LLMPERF_PYTHON to use another interpreter)",
                pkg = kind.name()
            )
        })?;
        Ok(vis)
    }

    /// Initialises the tracker run (`name`, the masked arguments as `config`, files under `outputs_dir`).
    pub fn init(
        &mut self,
        name: &str,
        config: &Map<String, Value>,
        outputs_dir: &str,
    ) -> Result<()> {
        let stdin = self.child.stdin.take().expect("stdin is taken once");
        let msg =
            json!({"type": "init", "name": name, "config": config, "outputs_dir": outputs_dir});
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE_CAPACITY);
        let thread = std::thread::spawn(move || write_lines(stdin, rx));
        tx.send(msg.to_string()).ok();
        self.writer = Some(Writer {
            tx,
            thread,
            skipped: Arc::new(AtomicU64::new(0)),
        });
        self.expect_event("ready", "init")
            .with_context(|| format!("--visualizer {}: initialisation failed", self.kind.name()))
    }

    /// The per-request feed (after [`Visualizer::init`]).
    pub fn feed(&self) -> Option<VisualizerFeed> {
        self.writer.as_ref().map(|w| VisualizerFeed {
            tx: w.tx.clone(),
            skipped: w.skipped.clone(),
        })
    }

    /// Flushes the queue, tells the tracker to finish and waits for the bridge to exit.
    pub fn finish(mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return Ok(());
        };
        let _ = writer.tx.send(r#"{"type": "finish"}"#.to_string());
        drop(writer.tx);
        let _ = writer.thread.join();
        let skipped = writer.skipped.load(Ordering::Relaxed);
        if skipped > 0 {
            tracing::warn!(
                "--visualizer {}: the tracker fell behind; {skipped} per-request messages were skipped",
                self.kind.name()
            );
        }
        let result = self.expect_event("finished", "finish");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        result.with_context(|| format!("--visualizer {}: finishing failed", self.kind.name()))
    }

    /// Waits for `{"event": want}`; an `error` event, the bridge's exit or the timeout is an error.
    fn expect_event(&mut self, want: &str, stage: &str) -> Result<()> {
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => match event.get("event").and_then(Value::as_str) {
                    Some(e) if e == want => return Ok(()),
                    Some("error") => {
                        let message = event["message"].as_str().unwrap_or("unknown error");
                        bail!("{message}");
                    }
                    _ => tracing::info!("[visualizer] {}", event),
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    bail!(
                        "the bridge did not answer within {}s ({stage})",
                        HANDSHAKE_TIMEOUT.as_secs()
                    );
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    bail!("the bridge exited during {stage} ({status})");
                }
            }
        }
    }
}

impl Drop for Visualizer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn write_lines(stdin: ChildStdin, rx: mpsc::Receiver<String>) {
    let mut out = std::io::BufWriter::new(stdin);
    while let Ok(line) = rx.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        // Flush when the queue is drained, so the tracker sees messages promptly.
        let mut batch = rx.try_iter();
        for line in batch.by_ref() {
            ok &= writeln!(out, "{line}").is_ok();
        }
        ok &= out.flush().is_ok();
        if !ok {
            // The bridge is gone; its error event says why. Drain so senders never block.
            for _ in rx.iter() {}
            return;
        }
    }
}
