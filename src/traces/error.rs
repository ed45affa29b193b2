//! The traces' one error type: a `--dataset-args` key, a trace file or a trace line that cannot be used.
//! Every one is a usage error (exit 2, found before the output folder exists): the [`From`] conversion
//! into [`UsageError`] is the one mapping.

use std::path::PathBuf;

use crate::error::UsageError;

/// Why a trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A `--dataset-args` key or value the trace format does not take (the message names the key).
    #[error("{0}")]
    DatasetArg(String),
    /// The trace file cannot be read.
    #[error("--dataset-path {}: cannot read the trace: {reason}", path.display())]
    Unreadable {
        /// The trace file.
        path: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
    /// One record (line or row) that is not valid: what is wrong with it.
    #[error("{0}")]
    BadRecord(String),
    /// Lines that are not valid, each `line N: …` (every one is listed before anything runs).
    #[error("{dataset} validation failed ({} error(s)) in {}:\n{}", lines.len(), path.display(), lines.join("\n"))]
    Invalid {
        /// The dataset name (`workload_trace`, `mooncake_trace`, …).
        dataset: &'static str,
        /// The trace file.
        path: PathBuf,
        /// One message per bad line.
        lines: Vec<String>,
    },
    /// The trace holds no request (the whole message, naming the file).
    #[error("{0}")]
    Empty(String),
}

impl From<TraceError> for UsageError {
    fn from(e: TraceError) -> UsageError {
        UsageError(e.to_string())
    }
}
