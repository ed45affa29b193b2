//! Why a run cannot be exported in `vllm bench serve`'s result format: a run of another kind, or a run
//! folder missing its arguments file, database or rows. `llmperf export` shows these as usage errors; a
//! run's own `--save-format vllm-bench` as a warning.

/// Why [`super::prepare`] (or [`super::RunInfo::from_args`]) refused a run.
#[derive(Debug, thiserror::Error)]
pub enum VllmBenchError {
    /// The run is not a text generation run (embedding, rerank).
    #[error("--api {0}: vLLM's generation result format describes text generation runs only")]
    NotGeneration(String),
    /// The run folder's arguments file is missing or unreadable.
    #[error("{0}: the run's arguments file cannot be read")]
    NoArgs(String),
    /// The run folder has no database.
    #[error("{run}: no database ({reason})")]
    NoDatabase {
        /// The run folder.
        run: String,
        /// The file system's reason.
        reason: String,
    },
    /// The database's rows cannot be read.
    #[error("{run}: {reason}")]
    Rows {
        /// The run folder.
        run: String,
        /// The reader's reason, with its causes.
        reason: String,
    },
    /// The run's arguments describe a run of another kind.
    #[error("{run}: {error}")]
    Run {
        /// The run folder.
        run: String,
        /// Why its arguments were refused.
        error: Box<VllmBenchError>,
    },
}
