//! `--enable-progress-tracker`: `<root>/progress.json`, as evalscope 1.14.1's `ProgressTracker` writes it
//! (`utils/tqdm_utils/progress_tracker.py`), then llmperf's extra keys.
//!
//! evalscope's keys, in its order: `status` (`running`, `completed` or `error`), `pipeline` (`perf`),
//! `total_count` (Σ `--number`, warmup excluded), `processed_count` (measured requests finished so far),
//! `percent` (`round(processed / total × 100, 2)`), `updated_at` (local time, ISO 8601). llmperf adds
//! `runs_total`, `runs_done`, `current_run` (the run folder name, `null` before the first run) and
//! `interrupted`, plus `error` (the message) when the sweep failed. An interrupted sweep ends with status
//! `error`, as evalscope's does (its interrupt is an exception), and `"interrupted": true`.
//!
//! Writes are atomic (a `.tmp` file renamed over the old one). Request updates are written at most once a
//! second; every status or run change is written at once. A write error is logged once and never stops the
//! run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::pyjson::{self, PyFormatter};

/// Request updates are flushed at most this often (evalscope's `write_interval`).
const WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// How the sweep ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinalStatus {
    /// Every run finished.
    Completed,
    /// A signal cut the sweep short.
    Interrupted,
    /// A run failed with this message.
    Failed(String),
}

/// The `progress.json` writer. One owner at a time: the sweep, lent to each run's aggregator.
#[derive(Debug)]
pub struct ProgressTracker {
    path: PathBuf,
    total_count: u64,
    processed_count: u64,
    runs_total: usize,
    runs_done: usize,
    current_run: Option<String>,
    status: &'static str,
    interrupted: bool,
    error: Option<String>,
    last_write: Option<Instant>,
    warned: bool,
}

impl ProgressTracker {
    /// Starts tracking `total_count` measured requests over `runs_total` runs; writes the first state.
    pub fn start(path: PathBuf, total_count: u64, runs_total: usize) -> Self {
        let mut tracker = ProgressTracker {
            path,
            total_count,
            processed_count: 0,
            runs_total,
            runs_done: 0,
            current_run: None,
            status: "running",
            interrupted: false,
            error: None,
            last_write: None,
            warned: false,
        };
        tracker.write();
        tracker
    }

    /// A run starts.
    pub fn run_started(&mut self, name: &str) {
        self.current_run = Some(name.to_string());
        self.write();
    }

    /// One measured request finished (written at most once a second).
    pub fn request_done(&mut self) {
        self.processed_count += 1;
        if self
            .last_write
            .is_none_or(|at| at.elapsed() >= WRITE_INTERVAL)
        {
            self.write();
        }
    }

    /// The current run finished (its files are written).
    pub fn run_finished(&mut self) {
        self.runs_done += 1;
        self.write();
    }

    /// The final state.
    pub fn finish(&mut self, status: FinalStatus) {
        match status {
            FinalStatus::Completed => self.status = "completed",
            FinalStatus::Interrupted => {
                self.status = "error";
                self.interrupted = true;
            }
            FinalStatus::Failed(message) => {
                self.status = "error";
                self.error = Some(message);
            }
        }
        self.write();
    }

    /// The JSON text of the current state.
    fn state_json(&self) -> String {
        let percent = if self.total_count > 0 {
            Value::from(pyjson::round(
                self.processed_count as f64 / self.total_count as f64 * 100.0,
                2,
            ))
        } else {
            Value::Null
        };
        let mut m = Map::new();
        m.insert("status".into(), json!(self.status));
        m.insert("pipeline".into(), json!("perf"));
        m.insert("total_count".into(), json!(self.total_count));
        m.insert("processed_count".into(), json!(self.processed_count));
        m.insert("percent".into(), percent);
        m.insert("updated_at".into(), json!(iso_now()));
        m.insert("runs_total".into(), json!(self.runs_total));
        m.insert("runs_done".into(), json!(self.runs_done));
        m.insert("current_run".into(), json!(self.current_run));
        m.insert("interrupted".into(), json!(self.interrupted));
        if let Some(e) = &self.error {
            m.insert("error".into(), json!(e));
        }
        pyjson::to_string_with(&m, PyFormatter::indent2())
    }

    fn write(&mut self) {
        self.last_write = Some(Instant::now());
        let tmp = self.path.with_extension("json.tmp");
        let result = std::fs::write(&tmp, self.state_json())
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = result {
            if !self.warned {
                self.warned = true;
                tracing::warn!(
                    "--enable-progress-tracker: cannot write {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

/// Python's `datetime.now().isoformat()`: local time, microseconds unless they are zero.
fn iso_now() -> String {
    let now = chrono::Local::now().naive_local();
    if now.and_utc().timestamp_subsec_micros() == 0 {
        now.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        now.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &std::path::Path) -> Value {
        let text = std::fs::read_to_string(dir.join("progress.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn writes_evalscope_keys_first_then_llmperf_extras() {
        let dir = tempfile::tempdir().unwrap();
        let mut t =
            ProgressTracker::start(crate::run_folder::RunRoot::at(dir.path()).progress(), 3, 2);
        let text = std::fs::read_to_string(dir.path().join("progress.json")).unwrap();
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "status",
                "pipeline",
                "total_count",
                "processed_count",
                "percent",
                "updated_at",
                "runs_total",
                "runs_done",
                "current_run",
                "interrupted"
            ]
        );
        assert!(text.starts_with("{\n  \"status\": \"running\",\n  \"pipeline\": \"perf\",\n  \"total_count\": 3,\n  \"processed_count\": 0,\n  \"percent\": 0.0,\n"), "{text}");
        t.run_started("parallel_1_number_3");
        t.request_done();
        let v = read(dir.path());
        assert_eq!(v["current_run"], "parallel_1_number_3");
        // Throttled: the request finished within a second of the last write.
        assert_eq!(v["processed_count"], 0);
        t.request_done();
        t.request_done();
        t.run_finished();
        let v = read(dir.path());
        assert_eq!(v["processed_count"], 3);
        assert_eq!(v["percent"], 100.0);
        assert_eq!(v["runs_done"], 1);
        t.finish(FinalStatus::Completed);
        let v = read(dir.path());
        assert_eq!(v["status"], "completed");
        assert_eq!(v["interrupted"], false);
        assert!(!dir.path().join("progress.json.tmp").exists());
    }

    #[test]
    fn percent_is_rounded_and_failures_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut t =
            ProgressTracker::start(crate::run_folder::RunRoot::at(dir.path()).progress(), 3, 1);
        t.processed_count = 1;
        t.finish(FinalStatus::Failed("Test connection failed".into()));
        let v = read(dir.path());
        assert_eq!(v["percent"], 33.33);
        assert_eq!(v["status"], "error");
        assert_eq!(v["error"], "Test connection failed");
        let mut t =
            ProgressTracker::start(crate::run_folder::RunRoot::at(dir.path()).progress(), 3, 1);
        t.finish(FinalStatus::Interrupted);
        let v = read(dir.path());
        assert_eq!(
            (v["status"].as_str(), v["interrupted"].as_bool()),
            (Some("error"), Some(true))
        );
        let stamp = v["updated_at"].as_str().unwrap();
        assert_eq!(&stamp[10..11], "T", "{stamp}");
    }
}
