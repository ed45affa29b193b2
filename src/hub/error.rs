//! The hubs' one error type: why a file was not found or not downloaded. Its messages are the ones the
//! CLI shows (tests and docs quote them), composed from the variants: a failed request names its URL, a
//! failed file names its repository, a failed hub says which. No variant has a `#[source]`: each message
//! already carries its cause, and anyhow's `{:#}` (how runtime errors are shown) would print it twice.

use std::path::PathBuf;

/// Why a hub lookup or download failed.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// Downloading is turned off (`HF_HUB_OFFLINE`); `from` names the hub (` from ModelScope`) or is empty.
    #[error("Not downloaded{from}: HF_HUB_OFFLINE is set")]
    Offline {
        /// ` from ModelScope`, or empty.
        from: &'static str,
    },
    /// No cache folder to download into.
    #[error("Not downloaded: no {hub} cache folder (set {variable})")]
    NoCache {
        /// `Hugging Face` or `ModelScope`.
        hub: &'static str,
        /// The environment variable that names one.
        variable: &'static str,
    },
    /// The HTTP client could not start.
    #[error("cannot start an HTTP client: {0}")]
    Client(String),
    /// `MODELSCOPE_API_TOKEN` (or the saved login) cannot be sent as a header.
    #[error("MODELSCOPE_API_TOKEN is not a valid header value")]
    BadToken,
    /// A request got no (complete) answer.
    #[error("GET {url}: {detail}")]
    Transport {
        /// The URL asked.
        url: String,
        /// The transport's reason.
        detail: String,
    },
    /// The hub answered with an error status; `hint` says what the usual ones mean.
    #[error("GET {url}: HTTP {status}{hint}")]
    Http {
        /// The URL asked.
        url: String,
        /// The status answered.
        status: reqwest::StatusCode,
        /// ` (no such repo or file)` and the like, or empty.
        hint: &'static str,
    },
    /// A repository listing that cannot be read (the whole message).
    #[error("{0}")]
    BadListing(String),
    /// The repository has none of the files llmperf reads (the whole message).
    #[error("{0}")]
    NoFiles(String),
    /// A repository path that would leave the repository.
    #[error("{file}: not a file path inside the repository")]
    UnsafePath {
        /// The path as given.
        file: String,
    },
    /// A local file or folder could not be written (`action` is `create` or `write`).
    #[error("cannot {action} {}: {reason}", path.display())]
    Io {
        /// `create` (a folder) or `write` (a file).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error (not a `source`: the message already says it, and anyhow's `{:#}` would repeat it).
        reason: std::io::Error,
    },
    /// Fetching one file of a repository failed.
    #[error("{repo} {file}: {reason}")]
    File {
        /// The repository (`org/name`).
        repo: String,
        /// The file inside it.
        file: String,
        /// Why.
        reason: Box<HubError>,
    },
    /// The Hugging Face download failed.
    #[error("Download from the Hugging Face hub failed: {0}")]
    HuggingFace(Box<HubError>),
    /// Every ModelScope endpoint failed (one error per endpoint, in order).
    #[error("Download from ModelScope failed: {}", join(.0, "; "))]
    ModelScope(Vec<HubError>),
    /// Both hubs failed (the preferred first).
    #[error("{first}\n{second}")]
    BothHubs {
        /// The preferred hub's failure.
        first: Box<HubError>,
        /// The other hub's failure.
        second: Box<HubError>,
    },
    /// The download thread panicked.
    #[error("the download thread panicked")]
    Panicked,
    /// The dataset file is neither in a cache nor downloadable, or not in the folder given (the whole
    /// message: where it looked, why it was not downloaded, what to do).
    #[error("{0}")]
    NotFound(String),
}

impl HubError {
    /// `self` as the failure of `file` of `repo`.
    pub fn in_file(self, repo: &str, file: &str) -> HubError {
        HubError::File {
            repo: repo.to_string(),
            file: file.to_string(),
            reason: Box::new(self),
        }
    }
}

fn join(errors: &[HubError], separator: &str) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}
