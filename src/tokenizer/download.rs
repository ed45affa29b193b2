//! Fetching a tokenizer from the Hugging Face hub when it is in no local cache and a network is there, into
//! the Hugging Face cache layout (`models--org--name/snapshots/<commit>/…` plus `refs/main`), so the next
//! run — and `transformers` — find it offline.
//!
//! Files: `tokenizer.json` (required), `tokenizer_config.json`, `chat_template.jinja` and
//! `chat_template.json` (when the repo has them). The endpoint is `$HF_ENDPOINT` (a mirror, or a local test hub), else `https://huggingface.co`;
//! `$HF_TOKEN` is sent as a bearer token for gated repos and never written anywhere;
//! `$HF_HUB_OFFLINE=1` turns downloading off. Each file is written to a temporary name and renamed, so an
//! interrupted download leaves no half file behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::resolve::TokenizerFiles;

/// Files fetched, and whether each is required.
const FILES: [(&str, bool); 4] = [
    ("tokenizer.json", true),
    ("tokenizer_config.json", false),
    ("chat_template.jinja", false),
    ("chat_template.json", false),
];

/// The whole download must finish within this.
const TIMEOUT: Duration = Duration::from_secs(120);
/// Connecting to the hub must succeed within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The hub's base URL.
fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "https://huggingface.co".to_string())
        .trim_end_matches('/')
        .to_string()
}

/// Downloads `org/name`'s tokenizer files into `cache` (the Hugging Face hub cache folder). Runs on a thread
/// of its own (the blocking HTTP client must not run inside the async runtime).
pub fn download(org: &str, name: &str, cache: &Path) -> Result<TokenizerFiles, String> {
    let (org, name, cache) = (org.to_string(), name.to_string(), cache.to_path_buf());
    std::thread::spawn(move || fetch(&org, &name, &cache))
        .join()
        .unwrap_or_else(|_| Err("the download thread panicked".to_string()))
}

fn fetch(org: &str, name: &str, cache: &Path) -> Result<TokenizerFiles, String> {
    let base = endpoint();
    let client = reqwest::blocking::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("llmperf/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot start an HTTP client: {e}"))?;
    let token = std::env::var("HF_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    let repo = cache.join(format!("models--{org}--{name}"));
    let mut snapshot: Option<PathBuf> = None;
    for (file, required) in FILES {
        let url = format!("{base}/{org}/{name}/resolve/main/{file}");
        let mut req = client.get(&url);
        if let Some(t) = &token {
            req = req.bearer_auth(t.trim());
        }
        let resp = req.send().map_err(|e| format!("GET {url}: {e}"))?;
        let status = resp.status();
        if !status.is_success() {
            if !required && status == reqwest::StatusCode::NOT_FOUND {
                continue;
            }
            let hint = match status.as_u16() {
                401 | 403 => " (a gated or private repo: set HF_TOKEN)",
                404 => " (no such repo or file)",
                _ => "",
            };
            return Err(format!("GET {url}: HTTP {status}{hint}"));
        }
        let dir = match &snapshot {
            Some(d) => d.clone(),
            None => {
                let commit = resp
                    .headers()
                    .get("x-repo-commit")
                    .and_then(|v| v.to_str().ok())
                    .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
                    .unwrap_or("main")
                    .to_string();
                let d = repo.join("snapshots").join(&commit);
                std::fs::create_dir_all(&d)
                    .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
                write_atomic(&repo.join("refs/main"), commit.as_bytes())?;
                snapshot = Some(d.clone());
                d
            }
        };
        let bytes = resp.bytes().map_err(|e| format!("GET {url}: {e}"))?;
        write_atomic(&dir.join(file), &bytes)?;
    }
    let dir = snapshot.ok_or_else(|| "nothing was downloaded".to_string())?;
    Ok(TokenizerFiles {
        tokenizer_json: dir.join("tokenizer.json"),
        dir,
    })
}

/// Writes `bytes` to `path` through a temporary sibling and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let tmp = path.with_extension(format!("part-{}", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}
