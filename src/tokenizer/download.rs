//! Fetching a tokenizer when it is in no local cache: from ModelScope ([`crate::hub::modelscope`], as
//! evalscope's `modelscope.AutoTokenizer` does) into the ModelScope cache
//! (`models/org--name/snapshots/master/…`), or from the Hugging Face hub ([`crate::hub::hf`]) into its
//! cache layout (`models--org--name/snapshots/<commit>/…` plus `refs/main`).
//!
//! Files: `tokenizer.json` (required), `tokenizer_config.json`, `chat_template.jinja` and
//! `chat_template.json` (when the repo has them).

use std::path::{Path, PathBuf};

use crate::hub::cache::RepoKind;
use crate::hub::{commit_id, save, with_hub, write_atomic, HubError};

/// Files fetched, and whether each is required.
const FILES: [(&str, bool); 4] = [
    ("tokenizer.json", true),
    ("tokenizer_config.json", false),
    ("chat_template.jinja", false),
    ("chat_template.json", false),
];

/// Downloads `org/name`'s tokenizer files into `cache` (the Hugging Face hub cache folder); returns the
/// snapshot folder holding them.
pub fn download(org: &str, name: &str, cache: &Path) -> Result<PathBuf, HubError> {
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
            save(&dir.join(file), &mut body)
                .map_err(|e| e.in_file(&format!("{org}/{name}"), file))?;
        }
        snapshot.ok_or_else(|| HubError::NoFiles("nothing was downloaded".to_string()))
    })
}

/// Whether a repository file is one of the tokenizer files fetched (top level only).
fn tokenizer_file(path: &str) -> bool {
    FILES.iter().any(|(f, _)| *f == path)
}

/// Downloads `org/name`'s tokenizer files from ModelScope into its cache (the repository's listing says
/// which it has); returns the folder holding them.
pub fn download_modelscope(repo: &str) -> Result<PathBuf, HubError> {
    let files =
        crate::hub::modelscope::download_selected(RepoKind::Model, repo, None, tokenizer_file)?;
    files
        .iter()
        .find(|f| f.file_name().is_some_and(|n| n == "tokenizer.json"))
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .ok_or_else(|| {
            HubError::NoFiles(format!("the ModelScope model {repo} has no tokenizer.json"))
        })
}
