//! The model and dataset hubs evalscope downloads from, and their local caches: the Hugging Face hub
//! ([`hf`]) and ModelScope ([`modelscope`], with its cache layout in [`cache`] and its saved login in
//! [`cookies`]). [`source`] is evalscope's `DatasetSource`: which repository and file a built-in dataset
//! reads on each hub, found in the caches or downloaded on first use, by `--data-source`.
//!
//! A leaf module: it uses no other part of the crate. Downloads are blocking and run on a thread of their
//! own (the blocking HTTP client must not run inside the async runtime). Each file is written to a
//! temporary name and renamed, so an interrupted download leaves no half file behind. Tokens
//! (`HF_TOKEN`, `MODELSCOPE_API_TOKEN`, the saved ModelScope login) go to their hub only and are never
//! logged or written.

pub mod cache;
pub mod cookies;
pub mod error;
pub mod hf;
pub mod modelscope;
pub mod source;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use cache::modelscope_roots;
pub use error::HubError;
pub(crate) use hf::with_hub;
pub use hf::{download_dataset, hf_hub_cache, snapshots, try_download};

/// Where evalscope loads a built-in dataset from (`--data-source`; evalscope's default is ModelScope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataSource {
    /// ModelScope (evalscope's default).
    #[default]
    ModelScope,
    /// The Hugging Face hub.
    HuggingFace,
    /// A local folder: `--dataset-path`, else the ModelScope dataset id read as a path.
    Local,
}

impl DataSource {
    /// The value as `--data-source` spells it.
    pub fn name(self) -> &'static str {
        match self {
            DataSource::ModelScope => "modelscope",
            DataSource::HuggingFace => "huggingface",
            DataSource::Local => "local",
        }
    }

    /// Parses a `--data-source` value.
    pub fn parse(value: &str) -> Option<DataSource> {
        match value {
            "modelscope" => Some(DataSource::ModelScope),
            "huggingface" => Some(DataSource::HuggingFace),
            "local" => Some(DataSource::Local),
            _ => None,
        }
    }
}

/// Whether downloading is turned off (`HF_HUB_OFFLINE` set to `1`, `true`, `yes` or `on`). llmperf reads it
/// for ModelScope too (the ModelScope client has no such switch).
pub fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
        .unwrap_or(false)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Each path on a line of its own, as `  - path` (the "Looked in" lists of the not-found errors).
pub fn bullet_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("  - {}", p.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A commit id as the hub gives it (letters and digits only), else `None`.
pub(crate) fn commit_id(value: Option<&str>) -> Option<String> {
    value
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
        .map(str::to_string)
}

/// A repository file path that stays inside the repository (no `..`, no empty or absolute parts).
pub(crate) fn safe_repo_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path
            .split('/')
            .any(|p| p == ".." || p == "." || p.is_empty())
}

/// Writes `bytes` to `path` through a temporary sibling and a rename.
pub(crate) fn write_atomic(path: &Path, mut bytes: &[u8]) -> Result<(), HubError> {
    save(path, &mut bytes)
}

/// Streams `body` (a response) into `path` through a temporary sibling and a rename: a large shard never
/// sits whole in memory, and an interrupted download leaves no half file under the final name.
pub(crate) fn save(path: &Path, body: &mut dyn Read) -> Result<(), HubError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|reason| HubError::Io {
            action: "create",
            path: parent.to_path_buf(),
            reason,
        })?;
    }
    let tmp = path.with_extension(format!("part-{}", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| std::io::copy(body, &mut f).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    result.map_err(|reason| {
        let _ = std::fs::remove_file(&tmp);
        HubError::Io {
            action: "write",
            path: path.to_path_buf(),
            reason,
        }
    })
}
