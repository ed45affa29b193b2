//! The scenario's one error type: a `--scenario` value, an AgentX data set or a trace line that cannot
//! be used. Every one is a usage error (exit 2, found before the output folder exists): the [`From`]
//! conversion into [`UsageError`] is the one mapping.

use std::path::PathBuf;

use crate::error::UsageError;

/// Why a scenario cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A `--scenario` value or key that cannot be used (what is wrong with it).
    #[error("--scenario: {0}")]
    Config(String),
    /// One trace line that is not a valid session (what is wrong with it).
    #[error("{0}")]
    BadSession(String),
    /// The trace file cannot be opened or read (`action` is `open` or `read`).
    #[error("AgentX trace {}: cannot {action}: {reason}", path.display())]
    TraceIo {
        /// The trace file.
        path: PathBuf,
        /// `open` or `read`.
        action: &'static str,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// A line of the trace file is not a valid session.
    #[error("AgentX trace {} line {line}: {reason}", path.display())]
    TraceLine {
        /// The trace file.
        path: PathBuf,
        /// The line number (from 1).
        line: usize,
        /// What is wrong with it.
        reason: Box<ScenarioError>,
    },
    /// The trace file has no session.
    #[error("AgentX trace {} holds no session", path.display())]
    NoSession {
        /// The trace file.
        path: PathBuf,
    },
    /// A file cannot be opened or read for its hash (`action` is `open` or `read`).
    #[error("cannot {action} {}: {reason}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// `open` or `read`.
        action: &'static str,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// The AgentX data set cannot be found or used (`--data-source`, `--dataset-path`, the hub caches:
    /// the whole message, naming the flag and what to do).
    #[error("{0}")]
    Dataset(String),
    /// A benchmark-mode trace file whose sha256 is not the pinned one.
    #[error("--scenario agentx: benchmark dataset hash mismatch for {}: sha256 {sha256}, the pinned {variant} traces.jsonl is {pinned} (use mode \"smoke\" to replay an unverified file)", file.display())]
    HashMismatch {
        /// The trace file.
        file: PathBuf,
        /// Its sha256.
        sha256: String,
        /// The variant (`256k`, `full`).
        variant: &'static str,
        /// The pinned sha256.
        pinned: &'static str,
    },
}

impl From<ScenarioError> for UsageError {
    fn from(e: ScenarioError) -> UsageError {
        UsageError(e.to_string())
    }
}
