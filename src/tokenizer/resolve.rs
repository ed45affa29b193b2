//! Where `--tokenizer-path` points: a local directory, a `tokenizer.json` file, or a hub id (`org/name`)
//! found in the local Hugging Face or ModelScope cache, else downloaded — from ModelScope as evalscope
//! does, then from the Hugging Face hub (the other way round with `--data-source huggingface`) — into that
//! hub's cache ([`crate::hub`]) unless `HF_HUB_OFFLINE=1`. A hub id that is nowhere and cannot be
//! downloaded is an error that lists every place looked at and why each download failed.
//!
//! Cache layouts searched for a hub id `org/name`:
//! * Hugging Face: `$HF_HUB_CACHE`, else `$HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, else
//!   `~/.cache/huggingface/hub`; inside it `models--org--name/snapshots/<revision>/`, the revision named by
//!   `models--org--name/refs/main` first, then any other snapshot holding a `tokenizer.json` (newest first).
//! * ModelScope: `$MODELSCOPE_CACHE`, else `~/.cache/modelscope`: `models/org--name/snapshots/master/`
//!   (ModelScope ≥ 1.38, [`crate::hub::cache`]); in it and in its `hub/` folder `models/org/name/`
//!   (ModelScope ≥ 1.17) or `org/name/` (older), each also with the dots of the name written as `___` (how
//!   ModelScope stores e.g. `Qwen2.5` on disk).

use std::path::{Path, PathBuf};

use crate::hub::{hf_hub_cache, modelscope_roots, DataSource, HubError};

/// The files a tokenizer is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerFiles {
    /// `tokenizer.json`.
    pub tokenizer_json: PathBuf,
    /// The folder holding it (for `tokenizer_config.json`, `chat_template.jinja`).
    pub dir: PathBuf,
}

/// Why `--tokenizer-path` could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A local path that exists but holds no `tokenizer.json`.
    #[error("--tokenizer-path {path}: no tokenizer.json in this folder (llmperf needs the fast-tokenizer file `tokenizer.json`)")]
    NoTokenizerJson {
        /// The folder.
        path: String,
    },
    /// Neither a local path nor a cached hub id, and not downloadable.
    #[error("--tokenizer-path {spec:?}: not a local folder or file, and not found in the local model caches. Looked in:\n{}\n{download}. Download it first (e.g. `modelscope download --model {spec} tokenizer.json tokenizer_config.json`) or pass the folder holding tokenizer.json", crate::hub::bullet_list(looked))]
    NotFound {
        /// What was given.
        spec: String,
        /// Every candidate folder checked.
        looked: Vec<PathBuf>,
        /// Why it was not downloaded.
        download: String,
    },
}

/// Resolves `spec` to tokenizer files (a hub id downloaded from ModelScope first).
pub fn resolve(spec: &str) -> Result<TokenizerFiles, ResolveError> {
    resolve_from(spec, DataSource::ModelScope)
}

/// Resolves `spec` to tokenizer files; a hub id missing from the caches is downloaded from the hub
/// `source` names first (ModelScope unless it is `huggingface`), then the other.
pub fn resolve_from(spec: &str, source: DataSource) -> Result<TokenizerFiles, ResolveError> {
    let path = Path::new(spec);
    if path.is_file() {
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        return Ok(TokenizerFiles {
            tokenizer_json: path.to_path_buf(),
            dir,
        });
    }
    if path.is_dir() {
        let file = path.join("tokenizer.json");
        if file.is_file() {
            return Ok(TokenizerFiles {
                tokenizer_json: file,
                dir: path.to_path_buf(),
            });
        }
        return Err(ResolveError::NoTokenizerJson {
            path: spec.to_string(),
        });
    }
    let mut looked = vec![path.to_path_buf()];
    if let Some((org, name)) = hub_id(spec) {
        if let Some(cache) = hf_hub_cache() {
            let repo = cache.join(format!("models--{org}--{name}"));
            if let Some(found) = hf_snapshot(&repo) {
                return Ok(found);
            }
            looked.push(repo.join("snapshots"));
        }
        for root in modelscope_roots() {
            for name in name_variants(name) {
                for candidate in [
                    root.join("models").join(org).join(&name),
                    root.join(org).join(&name),
                ] {
                    if candidate.join("tokenizer.json").is_file() {
                        return Ok(TokenizerFiles {
                            tokenizer_json: candidate.join("tokenizer.json"),
                            dir: candidate,
                        });
                    }
                    if !looked.contains(&candidate) {
                        looked.push(candidate);
                    }
                }
            }
        }
    }
    if let Some((org, name)) = hub_id(spec) {
        match crate::hub::cache::cached_model_dir(&format!("{org}/{name}"), "tokenizer.json") {
            Ok(dir) => {
                return Ok(TokenizerFiles {
                    tokenizer_json: dir.join("tokenizer.json"),
                    dir,
                })
            }
            Err(more) => {
                for p in more {
                    if !looked.contains(&p) {
                        looked.push(p);
                    }
                }
            }
        }
    }
    let download = match hub_id(spec) {
        None => "Not a hub id (org/name), so nothing to download".to_string(),
        Some((org, name)) => match download(org, name, source) {
            Ok(dir) => {
                tracing::info!("--tokenizer-path {spec}: downloaded into {}", dir.display());
                return Ok(TokenizerFiles {
                    tokenizer_json: dir.join("tokenizer.json"),
                    dir,
                });
            }
            Err(why) => why.to_string(),
        },
    };
    Err(ResolveError::NotFound {
        spec: spec.to_string(),
        looked,
        download,
    })
}

/// Downloads `org/name`'s tokenizer from the preferred hub, else the other; `Err` says why each failed.
fn download(org: &str, name: &str, source: DataSource) -> Result<PathBuf, HubError> {
    if crate::hub::offline() {
        return Err(HubError::Offline { from: "" });
    }
    let repo = format!("{org}/{name}");
    let modelscope = || super::download::download_modelscope(&repo);
    let hf = || crate::hub::try_download(|cache| super::download::download(org, name, cache));
    type Fetch<'a> = &'a dyn Fn() -> Result<PathBuf, HubError>;
    let (first, second): (Fetch, Fetch) = if source == DataSource::HuggingFace {
        (&hf, &modelscope)
    } else {
        (&modelscope, &hf)
    };
    let why_first = match first() {
        Ok(dir) => return Ok(dir),
        Err(e) => e,
    };
    second().map_err(|why_second| HubError::BothHubs {
        first: Box::new(why_first),
        second: Box::new(why_second),
    })
}

/// `org/name` split in two, when `spec` has that shape.
fn hub_id(spec: &str) -> Option<(&str, &str)> {
    let (org, name) = spec.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (ok(org) && ok(name)).then_some((org, name))
}

/// The name as written, and with ModelScope's `.` → `___` escaping.
fn name_variants(name: &str) -> Vec<String> {
    let mut v = vec![name.to_string()];
    if name.contains('.') {
        v.push(name.replace('.', "___"));
    }
    v
}

/// The snapshot of a Hugging Face cache repo folder holding `tokenizer.json`: the one `refs/main` names,
/// else the most recently modified one.
fn hf_snapshot(repo: &Path) -> Option<TokenizerFiles> {
    crate::hub::snapshots(repo, None)
        .into_iter()
        .find_map(|dir| {
            let file = dir.join("tokenizer.json");
            file.is_file().then_some(TokenizerFiles {
                tokenizer_json: file,
                dir,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids_are_recognised() {
        assert_eq!(hub_id("Qwen/Qwen3.5-4B"), Some(("Qwen", "Qwen3.5-4B")));
        assert_eq!(hub_id("a/b/c"), None);
        assert_eq!(hub_id("../x"), None);
        assert_eq!(hub_id("plain"), None);
        assert_eq!(name_variants("Qwen2.5-7B")[1], "Qwen2___5-7B");
    }

    #[test]
    fn local_dir_without_tokenizer_json_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = resolve(dir.path().to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("no tokenizer.json"), "{e}");
    }
}
