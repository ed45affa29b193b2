//! Fetching a tokenizer from the Hugging Face hub ([`crate::hub`]) when it is in no local cache, into the
//! Hugging Face cache layout (`models--org--name/snapshots/<commit>/…` plus `refs/main`).
//!
//! Files: `tokenizer.json` (required), `tokenizer_config.json`, `chat_template.jinja` and
//! `chat_template.json` (when the repo has them).

use std::path::{Path, PathBuf};

use crate::hub::{commit_id, save, with_hub, write_atomic};

/// Files fetched, and whether each is required.
const FILES: [(&str, bool); 4] = [
    ("tokenizer.json", true),
    ("tokenizer_config.json", false),
    ("chat_template.jinja", false),
    ("chat_template.json", false),
];

/// Downloads `org/name`'s tokenizer files into `cache` (the Hugging Face hub cache folder); returns the
/// snapshot folder holding them.
pub fn download(org: &str, name: &str, cache: &Path) -> Result<PathBuf, String> {
    let (org, name, cache) = (org.to_string(), name.to_string(), cache.to_path_buf());
    with_hub(move |hub| {
        let repo = cache.join(format!("models--{org}--{name}"));
        let mut snapshot: Option<PathBuf> = None;
        for (file, required) in FILES {
            let path = format!("{org}/{name}/resolve/main/{file}");
            let resp = if required {
                hub.get(&path)?
            } else {
                match hub.get_optional(&path)? {
                    Some(resp) => resp,
                    None => continue,
                }
            };
            let dir = match &snapshot {
                Some(d) => d.clone(),
                None => {
                    let commit = commit_id(
                        resp.headers()
                            .get("x-repo-commit")
                            .and_then(|v| v.to_str().ok()),
                    )
                    .unwrap_or_else(|| "main".to_string());
                    let d = repo.join("snapshots").join(&commit);
                    write_atomic(&repo.join("refs/main"), commit.as_bytes())?;
                    snapshot = Some(d.clone());
                    d
                }
            };
            let mut body = resp;
            save(&dir.join(file), &mut body).map_err(|e| format!("{org}/{name} {file}: {e}"))?;
        }
        snapshot.ok_or_else(|| "nothing was downloaded".to_string())
    })
}
