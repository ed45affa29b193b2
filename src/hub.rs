//! The Hugging Face hub, for what is in no local cache: tokenizer files ([`crate::tokenizer`]) and the
//! parquet files of hub datasets (`kontext_bench`, `mmmu_multi_image`). Files land in the Hugging Face
//! cache layout (`models--org--name/…`, `datasets--org--name/snapshots/<commit>/…` plus `refs/…`), so the
//! next run — and the Python tools — find them offline.
//!
//! The endpoint is `$HF_ENDPOINT` (a mirror, or a local test hub), else `https://huggingface.co`;
//! `$HF_TOKEN` is sent as a bearer token for gated repos and never written anywhere; `$HF_HUB_OFFLINE=1`
//! turns downloading off. Each file is written to a temporary name and renamed, so an interrupted download
//! leaves no half file behind. Downloads run on a thread of their own: the blocking HTTP client must not
//! run inside the async runtime. Where the local caches are (`$HF_HUB_CACHE`, `$HF_HOME`,
//! `$MODELSCOPE_CACHE`, `~/.cache/…`) is decided here too, for tokenizers and datasets alike.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Connecting to the hub must succeed within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One file must arrive within this.
const FILE_TIMEOUT: Duration = Duration::from_secs(900);

/// Whether downloading is turned off (`HF_HUB_OFFLINE` set to `1`, `true`, `yes` or `on`).
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

/// The Hugging Face hub cache folder.
pub fn hf_hub_cache() -> Option<PathBuf> {
    env_path("HF_HUB_CACHE")
        .or_else(|| env_path("HUGGINGFACE_HUB_CACHE"))
        .or_else(|| env_path("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| home().map(|h| h.join(".cache/huggingface/hub")))
}

/// The ModelScope cache roots to search (the configured one and its `hub/` folder).
pub fn modelscope_roots() -> Vec<PathBuf> {
    match env_path("MODELSCOPE_CACHE") {
        Some(root) => vec![root.join("hub"), root],
        None => home()
            .map(|h| vec![h.join(".cache/modelscope/hub")])
            .unwrap_or_default(),
    }
}

/// Runs `fetch` with the Hugging Face cache folder when downloading is allowed. `Err` says why nothing
/// was downloaded, as a sentence to follow a "Looked in" list.
pub fn try_download<T>(fetch: impl FnOnce(&Path) -> Result<T, String>) -> Result<T, String> {
    if offline() {
        return Err("Not downloaded: HF_HUB_OFFLINE is set".to_string());
    }
    let Some(cache) = hf_hub_cache() else {
        return Err("Not downloaded: no Hugging Face cache folder (set HF_HOME)".to_string());
    };
    fetch(&cache).map_err(|e| format!("Download from the Hugging Face hub failed: {e}"))
}

/// The snapshot folders of a Hugging Face cache repo folder (`models--…`, `datasets--…`), best first: the
/// `pinned` revision, the one `refs/main` names, then the others, newest first (possibly repeated).
pub fn snapshots(repo: &Path, pinned: Option<&str>) -> Vec<PathBuf> {
    let root = repo.join("snapshots");
    let mut candidates: Vec<PathBuf> = pinned.iter().map(|rev| root.join(rev)).collect();
    if let Ok(rev) = std::fs::read_to_string(repo.join("refs/main")) {
        candidates.push(root.join(rev.trim()));
    }
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| Some((e.metadata().and_then(|m| m.modified()).ok()?, e.path())))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    candidates.extend(dirs.into_iter().rev().map(|(_, d)| d));
    candidates
}

/// Each path on a line of its own, as `  - path` (the "Looked in" lists of the not-found errors).
pub fn bullet_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("  - {}", p.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hub's base URL.
fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "https://huggingface.co".to_string())
        .trim_end_matches('/')
        .to_string()
}

/// A client for the hub (endpoint, token).
pub(crate) struct Hub {
    base: String,
    client: reqwest::blocking::Client,
    token: Option<String>,
}

impl Hub {
    fn new() -> Result<Hub, String> {
        let client = reqwest::blocking::Client::builder()
            .timeout(FILE_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("llmperf/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot start an HTTP client: {e}"))?;
        Ok(Hub {
            base: endpoint(),
            client,
            token: std::env::var("HF_TOKEN")
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
        })
    }

    /// `GET {endpoint}/{path}`: a successful response, or why it failed.
    pub(crate) fn get(&self, path: &str) -> Result<reqwest::blocking::Response, String> {
        let (url, resp) = self.send(path)?;
        success(&url, resp)
    }

    /// As [`Hub::get`], but a file the repo does not have (404) is `None`.
    pub(crate) fn get_optional(
        &self,
        path: &str,
    ) -> Result<Option<reqwest::blocking::Response>, String> {
        let (url, resp) = self.send(path)?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        success(&url, resp).map(Some)
    }

    fn send(&self, path: &str) -> Result<(String, reqwest::blocking::Response), String> {
        let url = format!("{}/{path}", self.base);
        let mut req = self.client.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().map_err(|e| format!("GET {url}: {e}"))?;
        Ok((url, resp))
    }
}

/// `resp` when it succeeded, else why (with a hint for the usual statuses).
fn success(
    url: &str,
    resp: reqwest::blocking::Response,
) -> Result<reqwest::blocking::Response, String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let hint = match status.as_u16() {
        401 | 403 => " (a gated or private repo: set HF_TOKEN)",
        404 => " (no such repo or file)",
        _ => "",
    };
    Err(format!("GET {url}: HTTP {status}{hint}"))
}

/// Runs `f` with a hub client on a thread of its own.
pub(crate) fn with_hub<T: Send + 'static>(
    f: impl FnOnce(&Hub) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    std::thread::spawn(move || Hub::new().and_then(|hub| f(&hub)))
        .join()
        .unwrap_or_else(|_| Err("the download thread panicked".to_string()))
}

/// A commit id as the hub gives it (letters and digits only), else `None`.
pub(crate) fn commit_id(value: Option<&str>) -> Option<String> {
    value
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
        .map(str::to_string)
}

/// Writes `bytes` to `path` through a temporary sibling and a rename.
pub(crate) fn write_atomic(path: &Path, mut bytes: &[u8]) -> Result<(), String> {
    save(path, &mut bytes)
}

/// Streams `body` (a response) into `path` through a temporary sibling and a rename: a large shard never
/// sits whole in memory, and an interrupted download leaves no half file under the final name.
pub(crate) fn save(path: &Path, body: &mut dyn Read) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let tmp = path.with_extension(format!("part-{}", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| std::io::copy(body, &mut f).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Downloads the files of dataset `repo` (`org/name`) at `revision` that `keep` selects into `cache` (the
/// Hugging Face hub cache folder); returns the snapshot folder.
pub fn download_dataset(
    repo: &str,
    revision: &str,
    keep: fn(&str) -> bool,
    cache: &Path,
) -> Result<PathBuf, String> {
    let (repo, revision, cache) = (repo.to_string(), revision.to_string(), cache.to_path_buf());
    with_hub(move |hub| {
        let listing = hub
            .get(&format!("api/datasets/{repo}/revision/{revision}"))?
            .bytes()
            .map_err(|e| format!("the hub's file list for {repo}: {e}"))?;
        let info: serde_json::Value = serde_json::from_slice(&listing)
            .map_err(|e| format!("the hub's file list for {repo} is not JSON: {e}"))?;
        let sha = commit_id(info["sha"].as_str()).unwrap_or_else(|| revision.clone());
        let files: Vec<String> = info["siblings"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|f| f["rfilename"].as_str())
                    .filter(|f| keep(f) && !f.split('/').any(|p| p == ".." || p.is_empty()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if files.is_empty() {
            return Err(format!(
                "the hub lists no files of {repo} at {revision} that llmperf reads"
            ));
        }
        let root = cache.join(format!("datasets--{}", repo.replace('/', "--")));
        let snapshot = root.join("snapshots").join(&sha);
        for (i, file) in files.iter().enumerate() {
            let dest = snapshot.join(file);
            if dest.is_file() {
                continue;
            }
            tracing::info!("downloading {repo} {file} ({} of {})", i + 1, files.len());
            let mut body = hub.get(&format!("datasets/{repo}/resolve/{sha}/{file}"))?;
            save(&dest, &mut body).map_err(|e| format!("{repo} {file}: {e}"))?;
        }
        if revision == "main" {
            write_atomic(&root.join("refs/main"), sha.as_bytes())?;
        }
        Ok(snapshot)
    })
}
