//! The ModelScope hub, spoken as its `modelscope` client (1.40) speaks it, for datasets (`openqa`,
//! ShareGPT, LongAlpaca, the trie workloads, the image datasets, SWE-smith's trajectories) and tokenizers
//! (`--tokenizer-path org/name`).
//!
//! * Endpoint: `$MODELSCOPE_ENDPOINT`, else the deprecated `$MODELSCOPE_DOMAIN` (`https://` added when it
//!   has no scheme), else `https://modelscope.cn` with `https://www.modelscope.ai` as the fallback for a
//!   repository the first does not have (the other way round with `MODELSCOPE_PREFER_AI_SITE=true`).
//! * Token: `$MODELSCOPE_API_TOKEN` (set but empty: no token), else the saved login ([`super::cookies`]).
//!   Sent as the client sends it, `Authorization: Bearer <token>` and the cookie `m_session_id=<token>`;
//!   never logged.
//! * A file: `GET {endpoint}/api/v1/{models|datasets}/{owner}/{name}/repo?Revision={rev}&FilePath={path}`
//!   (revision `master` when none is given); redirects are followed (credentials are not sent on to
//!   another host). Listings: `GET …/models/{id}/repo/files?Revision=…&Recursive=True` and, paged by 200,
//!   `GET …/datasets/{id}/repo/tree?Revision=…&Recursive=True&PageNumber=N&PageSize=200`; the entries are
//!   `Data.Files[]` with `Path`, `Type` (`blob`/`tree`) and `Size`.
//! * Files land in the ModelScope cache ([`super::cache`]); `HF_HUB_OFFLINE=1` turns downloading off.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, COOKIE};

use super::cache::{self, RepoKind};
use super::error::HubError;
use super::{cookies, offline, safe_repo_path, save};

/// Connecting to the hub must succeed within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One file must arrive within this.
const FILE_TIMEOUT: Duration = Duration::from_secs(900);
/// Entries per page of a dataset listing (the client's page size).
const PAGE_SIZE: usize = 200;
/// The client's endpoints.
const DEFAULT_ENDPOINT: &str = "https://modelscope.cn";
const INTL_ENDPOINT: &str = "https://www.modelscope.ai";

/// The endpoints to try, in order: the configured one, else the two public sites.
pub fn endpoints() -> Vec<String> {
    let set = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let Some(e) = set("MODELSCOPE_ENDPOINT").or_else(|| set("MODELSCOPE_DOMAIN")) {
        return vec![normalize(&e)];
    }
    let prefer_ai = set("MODELSCOPE_PREFER_AI_SITE")
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let mut both = vec![DEFAULT_ENDPOINT.to_string(), INTL_ENDPOINT.to_string()];
    if prefer_ai {
        both.reverse();
    }
    both
}

/// `https://` added to a bare domain, no trailing slash.
fn normalize(endpoint: &str) -> String {
    let lower = endpoint.to_ascii_lowercase();
    let with_scheme = if lower.starts_with("http://") || lower.starts_with("https://") {
        endpoint.to_string()
    } else {
        format!("https://{endpoint}")
    };
    with_scheme.trim_end_matches('/').to_string()
}

/// The access token: `$MODELSCOPE_API_TOKEN` when set (empty means none), else the saved login.
fn token() -> Option<String> {
    match std::env::var("MODELSCOPE_API_TOKEN") {
        Ok(t) => Some(t.trim().to_string()).filter(|t| !t.is_empty()),
        Err(_) => cookies::saved_token(chrono::Utc::now().timestamp()),
    }
}

/// A file's URL on `endpoint`.
pub fn file_url(endpoint: &str, kind: RepoKind, repo: &str, revision: &str, file: &str) -> String {
    let base = format!("{endpoint}/api/v1/{}/{repo}/repo", kind.segment());
    reqwest::Url::parse_with_params(&base, [("Revision", revision), ("FilePath", file)])
        .map(String::from)
        .unwrap_or(base)
}

/// The URL of the first page of `repo`'s file listing on `endpoint` (datasets: the paged tree).
pub fn listing_url(endpoint: &str, kind: RepoKind, repo: &str, revision: &str) -> String {
    let seg = kind.segment();
    let (base, paged) = match kind {
        RepoKind::Model => (format!("{endpoint}/api/v1/{seg}/{repo}/repo/files"), false),
        RepoKind::Dataset => (format!("{endpoint}/api/v1/{seg}/{repo}/repo/tree"), true),
    };
    let mut params = vec![
        ("Revision", revision.to_string()),
        ("Recursive", "True".to_string()),
    ];
    if paged {
        params.push(("PageNumber", "1".to_string()));
        params.push(("PageSize", PAGE_SIZE.to_string()));
    }
    reqwest::Url::parse_with_params(&base, &params)
        .map(String::from)
        .unwrap_or(base)
}

/// One entry of a repository listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// The path inside the repository.
    pub path: String,
    /// Its size in bytes, when listed.
    pub size_bytes: Option<u64>,
}

/// A client for one endpoint.
struct Hub {
    endpoint: String,
    client: Client,
}

impl Hub {
    fn new(endpoint: &str) -> Result<Hub, HubError> {
        let mut headers = HeaderMap::new();
        headers.insert("Accept-Encoding", HeaderValue::from_static("identity"));
        if let Some(t) = token() {
            let mut bearer =
                HeaderValue::from_str(&format!("Bearer {t}")).map_err(|_| HubError::BadToken)?;
            bearer.set_sensitive(true);
            headers.insert(AUTHORIZATION, bearer);
            let mut cookie = HeaderValue::from_str(&format!("m_session_id={t}"))
                .map_err(|_| HubError::BadToken)?;
            cookie.set_sensitive(true);
            headers.insert(COOKIE, cookie);
        }
        let client = Client::builder()
            .timeout(FILE_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("llmperf/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .build()
            .map_err(|e| HubError::Client(e.to_string()))?;
        Ok(Hub {
            endpoint: endpoint.to_string(),
            client,
        })
    }

    fn get(&self, url: &str) -> Result<Response, HubError> {
        let resp = self
            .client
            .get(url)
            .send()
            .map_err(|e| transport(url, &e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let hint = match status.as_u16() {
            401 | 403 => " (a private or gated repository: set MODELSCOPE_API_TOKEN)",
            404 => " (no such repository or file)",
            _ => "",
        };
        Err(HubError::Http {
            url: url.to_string(),
            status,
            hint,
        })
    }

    /// The files (not folders) of `repo` at `revision`.
    fn list(&self, kind: RepoKind, repo: &str, revision: &str) -> Result<Vec<RepoFile>, HubError> {
        let seg = kind.segment();
        let mut files = Vec::new();
        for page in 1.. {
            let (base, paged) = match kind {
                RepoKind::Model => (
                    format!("{}/api/v1/{seg}/{repo}/repo/files", self.endpoint),
                    false,
                ),
                RepoKind::Dataset => (
                    format!("{}/api/v1/{seg}/{repo}/repo/tree", self.endpoint),
                    true,
                ),
            };
            let mut params = vec![
                ("Revision", revision.to_string()),
                ("Recursive", "True".to_string()),
            ];
            if paged {
                params.push(("PageNumber", page.to_string()));
                params.push(("PageSize", PAGE_SIZE.to_string()));
            }
            let url = reqwest::Url::parse_with_params(&base, &params)
                .map_err(|e| HubError::BadListing(format!("{base}: {e}")))?;
            let bytes = self
                .get(url.as_str())?
                .bytes()
                .map_err(|e| transport(url.as_str(), &e))?;
            let body: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                HubError::BadListing(format!("GET {url}: the listing is not JSON: {e}"))
            })?;
            let entries = listing_entries(&body);
            let n = entries.len();
            files.extend(entries);
            if !paged || n < PAGE_SIZE {
                break;
            }
        }
        Ok(files
            .into_iter()
            .filter(|f| safe_repo_path(&f.path))
            .collect())
    }

    /// Downloads `file` into `dest`.
    fn fetch(
        &self,
        kind: RepoKind,
        repo: &str,
        revision: &str,
        file: &str,
        dest: &std::path::Path,
    ) -> Result<(), HubError> {
        let url = file_url(&self.endpoint, kind, repo, revision, file);
        let mut body = self.get(&url)?;
        tracing::info!("downloading {file} of {repo} from {}", self.endpoint);
        save(dest, &mut body).map_err(|e| e.in_file(repo, file))
    }
}

/// A transport failure of `GET url`.
fn transport(url: &str, e: &reqwest::Error) -> HubError {
    HubError::Transport {
        url: url.to_string(),
        detail: plain_error(e),
    }
}

/// A transport error without the URL reqwest repeats (the caller names it).
fn plain_error(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// The `Files` of a listing answer (`{"Data": {"Files": […]}}`, or `Data` as the list itself).
fn listing_entries(body: &serde_json::Value) -> Vec<RepoFile> {
    let data = body.get("Data").unwrap_or(body);
    let list = data
        .as_array()
        .or_else(|| data.get("Files").and_then(|f| f.as_array()))
        .or_else(|| data.get("files").and_then(|f| f.as_array()));
    list.into_iter()
        .flatten()
        .filter(|e| e.get("Type").and_then(|t| t.as_str()).unwrap_or("blob") != "tree")
        .filter_map(|e| {
            let path = e
                .get("Path")
                .or_else(|| e.get("Name"))
                .and_then(|p| p.as_str())?;
            Some(RepoFile {
                path: path.trim_start_matches('/').to_string(),
                size_bytes: e.get("Size").and_then(|s| s.as_u64()),
            })
        })
        .collect()
}

/// Runs `f` against each endpoint in turn on a thread of its own, until one succeeds; the error lists
/// every attempt.
fn on_endpoints<T: Send + 'static>(
    f: impl Fn(&Hub) -> Result<T, HubError> + Send + 'static,
) -> Result<T, HubError> {
    if offline() {
        return Err(HubError::Offline {
            from: " from ModelScope",
        });
    }
    std::thread::spawn(move || {
        let mut why = Vec::new();
        for endpoint in endpoints() {
            match Hub::new(&endpoint).and_then(|hub| f(&hub)) {
                Ok(v) => return Ok(v),
                Err(e) => why.push(e),
            }
        }
        Err(HubError::ModelScope(why))
    })
    .join()
    .unwrap_or(Err(HubError::Panicked))
}

fn cache_root() -> Result<PathBuf, HubError> {
    cache::modelscope_root().ok_or(HubError::NoCache {
        hub: "ModelScope",
        variable: "MODELSCOPE_CACHE",
    })
}

/// Downloads `file` of `repo` at `revision` (`master` when none) into the ModelScope cache; returns its path.
pub fn download_file(
    kind: RepoKind,
    repo: &str,
    revision: Option<&str>,
    file: &str,
) -> Result<PathBuf, HubError> {
    if !safe_repo_path(file) {
        return Err(HubError::UnsafePath {
            file: file.to_string(),
        });
    }
    let root = cache_root()?;
    let dest = cache::download_target(&root, kind, repo, revision, file);
    let (repo, rev, file) = (
        repo.to_string(),
        revision.unwrap_or("master").to_string(),
        file.to_string(),
    );
    on_endpoints(move |hub| {
        hub.fetch(kind, &repo, &rev, &file, &dest)
            .map(|_| dest.clone())
    })
}

/// Downloads the files of `repo` at `revision` that `keep` selects (those not in the cache yet); returns
/// every selected file's path, in listing order.
pub fn download_selected(
    kind: RepoKind,
    repo: &str,
    revision: Option<&str>,
    keep: fn(&str) -> bool,
) -> Result<Vec<PathBuf>, HubError> {
    let root = cache_root()?;
    let (repo, revision) = (repo.to_string(), revision.map(str::to_string));
    on_endpoints(move |hub| {
        let rev = revision.as_deref().unwrap_or("master");
        let files: Vec<RepoFile> = hub
            .list(kind, &repo, rev)?
            .into_iter()
            .filter(|f| keep(&f.path))
            .collect();
        if files.is_empty() {
            return Err(HubError::NoFiles(format!(
                "{}: the listing of {repo} at {rev} has no file llmperf reads",
                hub.endpoint
            )));
        }
        let mut paths = Vec::new();
        for f in files {
            let dest = cache::download_target(&root, kind, &repo, revision.as_deref(), &f.path);
            let cached = std::fs::metadata(&dest)
                .is_ok_and(|m| m.is_file() && f.size_bytes.is_none_or(|s| s == m.len()));
            if !cached {
                hub.fetch(kind, &repo, rev, &f.path, &dest)?;
            }
            paths.push(dest);
        }
        Ok(paths)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_listings_as_the_client() {
        assert_eq!(
            file_url(
                "http://h",
                RepoKind::Dataset,
                "swift/sharegpt",
                "master",
                "a b/c.jsonl"
            ),
            "http://h/api/v1/datasets/swift/sharegpt/repo?Revision=master&FilePath=a+b%2Fc.jsonl"
        );
        assert_eq!(normalize("mirror.example/"), "https://mirror.example");
        let body = serde_json::json!({"Code": 200, "Data": {"Files": [
            {"Path": "data", "Type": "tree"},
            {"Path": "data/x.json", "Type": "blob", "Size": 3},
        ]}});
        assert_eq!(
            listing_entries(&body),
            vec![RepoFile {
                path: "data/x.json".into(),
                size_bytes: Some(3)
            }]
        );
    }
}
