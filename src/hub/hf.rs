//! The Hugging Face hub, for what is in no local cache: tokenizer files ([`crate::tokenizer`]), and with
//! `--data-source huggingface` single dataset files (`openqa`, ShareGPT, trie) and the files of one split
//! (LongAlpaca, `kontext_bench`, `mmmu_multi_image`, `flickr8k`, SWE-smith's trajectories). Files land in the Hugging Face cache layout
//! (`models--org--name/…`, `datasets--org--name/snapshots/<commit>/…` plus `refs/…`), so the next run — and
//! the Python tools — find them offline.
//!
//! The endpoint is `$HF_ENDPOINT` (a mirror, or a local test hub), else `https://huggingface.co`;
//! `$HF_TOKEN` is sent as a bearer token for gated repos and never written anywhere; `$HF_HUB_OFFLINE=1`
//! turns downloading off. Downloads run on a thread of their own: the blocking HTTP client must not run
//! inside the async runtime. The cache folder is `$HF_HUB_CACHE`, `$HUGGINGFACE_HUB_CACHE`, `$HF_HOME/hub`
//! or `~/.cache/huggingface/hub`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::HubError;
use super::{commit_id, env_path, home, offline, safe_repo_path, save, write_atomic};

/// Connecting to the hub must succeed within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One file must arrive within this.
const FILE_TIMEOUT: Duration = Duration::from_secs(900);

/// The Hugging Face hub cache folder.
pub fn hf_hub_cache() -> Option<PathBuf> {
    env_path("HF_HUB_CACHE")
        .or_else(|| env_path("HUGGINGFACE_HUB_CACHE"))
        .or_else(|| env_path("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| home().map(|h| h.join(".cache/huggingface/hub")))
}

/// Runs `fetch` with the Hugging Face cache folder when downloading is allowed. `Err` says why nothing
/// was downloaded, as a sentence to follow a "Looked in" list.
pub fn try_download<T>(fetch: impl FnOnce(&Path) -> Result<T, HubError>) -> Result<T, HubError> {
    if offline() {
        return Err(HubError::Offline { from: "" });
    }
    let Some(cache) = hf_hub_cache() else {
        return Err(HubError::NoCache {
            hub: "Hugging Face",
            variable: "HF_HOME",
        });
    };
    fetch(&cache).map_err(|e| HubError::HuggingFace(Box::new(e)))
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

/// The hub's base URL.
pub fn endpoint() -> String {
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
    fn new() -> Result<Hub, HubError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(FILE_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("llmperf/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HubError::Client(e.to_string()))?;
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
    pub(crate) fn get(&self, path: &str) -> Result<reqwest::blocking::Response, HubError> {
        let (url, resp) = self.send(path)?;
        success(&url, resp)
    }

    /// As [`Hub::get`], but a file the repo does not have (404) is `None`.
    pub(crate) fn get_optional(
        &self,
        path: &str,
    ) -> Result<Option<reqwest::blocking::Response>, HubError> {
        let (url, resp) = self.send(path)?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        success(&url, resp).map(Some)
    }

    fn send(&self, path: &str) -> Result<(String, reqwest::blocking::Response), HubError> {
        let url = format!("{}/{path}", self.base);
        let mut req = self.client.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().map_err(|e| HubError::Transport {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        Ok((url, resp))
    }
}

/// `resp` when it succeeded, else why (with a hint for the usual statuses).
fn success(
    url: &str,
    resp: reqwest::blocking::Response,
) -> Result<reqwest::blocking::Response, HubError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let hint = match status.as_u16() {
        401 | 403 => " (a gated or private repo: set HF_TOKEN)",
        404 => " (no such repo or file)",
        _ => "",
    };
    Err(HubError::Http {
        url: url.to_string(),
        status,
        hint,
    })
}

/// Runs `f` with a hub client on a thread of its own.
pub(crate) fn with_hub<T: Send + 'static>(
    f: impl FnOnce(&Hub) -> Result<T, HubError> + Send + 'static,
) -> Result<T, HubError> {
    std::thread::spawn(move || Hub::new().and_then(|hub| f(&hub)))
        .join()
        .unwrap_or(Err(HubError::Panicked))
}

/// Downloads the files of dataset `repo` (`org/name`) at `revision` that `keep` selects into `cache` (the
/// Hugging Face hub cache folder); returns the snapshot folder.
pub fn download_dataset(
    repo: &str,
    revision: &str,
    keep: fn(&str) -> bool,
    cache: &Path,
) -> Result<PathBuf, HubError> {
    let (repo, revision, cache) = (repo.to_string(), revision.to_string(), cache.to_path_buf());
    with_hub(move |hub| {
        let listing = hub
            .get(&format!("api/datasets/{repo}/revision/{revision}"))?
            .bytes()
            .map_err(|e| HubError::BadListing(format!("the hub's file list for {repo}: {e}")))?;
        let info: serde_json::Value = serde_json::from_slice(&listing).map_err(|e| {
            HubError::BadListing(format!("the hub's file list for {repo} is not JSON: {e}"))
        })?;
        let sha = commit_id(info["sha"].as_str()).unwrap_or_else(|| revision.clone());
        let files: Vec<String> = info["siblings"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|f| f["rfilename"].as_str())
                    .filter(|f| keep(f) && safe_repo_path(f))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if files.is_empty() {
            return Err(HubError::NoFiles(format!(
                "the hub lists no files of {repo} at {revision} that llmperf reads"
            )));
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
            save(&dest, &mut body).map_err(|e| e.in_file(&repo, file))?;
        }
        if revision == "main" {
            write_atomic(&root.join("refs/main"), sha.as_bytes())?;
        }
        Ok(snapshot)
    })
}

/// The cache folder of dataset `repo` (`org/name`) inside the Hugging Face cache `cache`.
pub fn dataset_repo_dir(cache: &Path, repo: &str) -> PathBuf {
    cache.join(format!("datasets--{}", repo.replace('/', "--")))
}

/// `file` of dataset `repo` in the Hugging Face cache, as `hf_hub_download` finds it offline: in the
/// snapshot `refs/<revision>` names (`main` when none is given) or the snapshot named by the revision
/// itself (a commit), else any snapshot holding it. `Err`: the snapshot folders looked in.
pub fn cached_dataset_file(
    repo: &str,
    revision: Option<&str>,
    file: &str,
) -> Result<PathBuf, Vec<PathBuf>> {
    let Some(cache) = hf_hub_cache() else {
        return Err(Vec::new());
    };
    let root = dataset_repo_dir(&cache, repo);
    let rev = revision.unwrap_or("main");
    let mut pinned = vec![rev.to_string()];
    if let Ok(commit) = std::fs::read_to_string(root.join("refs").join(rev)) {
        pinned.insert(0, commit.trim().to_string());
    }
    let mut candidates: Vec<PathBuf> = pinned
        .iter()
        .map(|p| root.join("snapshots").join(p))
        .collect();
    candidates.extend(snapshots(&root, None));
    for dir in &candidates {
        if dir.join(file).is_file() {
            return Ok(dir.join(file));
        }
    }
    Err(vec![root.join("snapshots")])
}

/// Downloads `file` of dataset `repo` at `revision` (`main` when none) into the Hugging Face cache `cache`
/// (`datasets--org--name/snapshots/<commit>/<file>`, plus `refs/<revision>`), as `hf_hub_download` does.
pub fn download_dataset_file(
    repo: &str,
    revision: Option<&str>,
    file: &str,
    cache: &Path,
) -> Result<PathBuf, HubError> {
    if !safe_repo_path(file) {
        return Err(HubError::UnsafePath {
            file: file.to_string(),
        });
    }
    let (repo, rev, file) = (
        repo.to_string(),
        revision.unwrap_or("main").to_string(),
        file.to_string(),
    );
    let root = dataset_repo_dir(cache, &repo);
    with_hub(move |hub| {
        let resp = hub.get(&format!("datasets/{repo}/resolve/{rev}/{file}"))?;
        let commit = commit_id(
            resp.headers()
                .get("x-repo-commit")
                .and_then(|v| v.to_str().ok()),
        )
        .unwrap_or_else(|| rev.clone());
        let dest = root.join("snapshots").join(&commit).join(&file);
        tracing::info!("downloading {file} of {repo} from the Hugging Face hub");
        let mut body = resp;
        save(&dest, &mut body).map_err(|e| e.in_file(&repo, &file))?;
        if commit != rev {
            write_atomic(&root.join("refs").join(&rev), commit.as_bytes())?;
        }
        Ok(dest)
    })
}
