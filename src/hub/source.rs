//! evalscope's `DatasetSource` and its two loaders, `download_hub_file` (one named file of the dataset:
//! `openqa`, ShareGPT, trie) and `load_hub_dataset` (the dataset's data files: `longalpaca`), with the
//! same choices:
//!
//! * `--dataset-path` a file: that file. A folder: the file of that name inside it (else an error); for
//!   `load_hub_dataset` the folder's data files.
//! * Else `--data-source` (default `modelscope`): `huggingface` takes the Hugging Face id, revision and file
//!   path when the source declares them (the ModelScope ones otherwise); `local` — or a ModelScope id that
//!   exists as a local path — reads `<id>/<file>` relative to the working directory.
//! * A hub file is looked up in that hub's cache first and downloaded there when it is missing; the error
//!   says which files were looked for, where, and what was fetched from where.

use std::path::{Path, PathBuf};

use super::cache::{self, RepoKind};
use super::{bullet_list, hf, modelscope, DataSource};

/// Where one built-in dataset lives on each hub (evalscope's `DatasetSource`).
#[derive(Debug, Clone, Copy)]
pub struct DatasetSource {
    /// The ModelScope id (also the local folder for `--data-source local`).
    pub dataset_id: &'static str,
    /// The ModelScope revision (`master` when none).
    pub dataset_revision: Option<&'static str>,
    /// The Hugging Face id, when it differs.
    pub hf_dataset_id: Option<&'static str>,
    /// The Hugging Face revision (`main` when none).
    pub hf_dataset_revision: Option<&'static str>,
    /// File paths that differ on the Hugging Face copy: `(file name, path there)`.
    pub hf_file_paths: &'static [(&'static str, &'static str)],
}

/// The hub a dataset is read from after evalscope's `_resolve_data_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolved {
    Local,
    ModelScope,
    HuggingFace,
}

impl DatasetSource {
    /// A dataset with one id on both hubs.
    pub const fn same_id(dataset_id: &'static str) -> DatasetSource {
        DatasetSource {
            dataset_id,
            dataset_revision: None,
            hf_dataset_id: None,
            hf_dataset_revision: None,
            hf_file_paths: &[],
        }
    }

    fn resolve(&self, data_source: DataSource) -> (Resolved, &'static str, Option<&'static str>) {
        if data_source == DataSource::Local || Path::new(self.dataset_id).exists() {
            return (Resolved::Local, self.dataset_id, None);
        }
        match data_source {
            DataSource::HuggingFace => (
                Resolved::HuggingFace,
                self.hf_dataset_id.unwrap_or(self.dataset_id),
                self.hf_dataset_revision.or(self.dataset_revision),
            ),
            _ => (Resolved::ModelScope, self.dataset_id, self.dataset_revision),
        }
    }

    /// The path of `file` on the Hugging Face copy.
    fn hf_file<'a>(&self, file: &'a str) -> &'a str {
        self.hf_file_paths
            .iter()
            .find(|(name, _)| *name == file)
            .map(|(_, path)| *path)
            .unwrap_or(file)
    }
}

/// The local copy of `file_name` of `source` (evalscope's `download_hub_file`). `what` names the dataset
/// in errors (`--dataset openqa`).
pub fn hub_file(
    what: &str,
    source: &DatasetSource,
    file_name: &str,
    dataset_path: Option<&Path>,
    data_source: DataSource,
) -> Result<PathBuf, String> {
    if let Some(path) = dataset_path {
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        return local_file(what, path, file_name);
    }
    let (hub, id, revision) = source.resolve(data_source);
    match hub {
        Resolved::Local => local_file(what, Path::new(id), file_name),
        Resolved::ModelScope => {
            let looked = match cache::cached_file(RepoKind::Dataset, id, revision, file_name) {
                Ok(found) => return Ok(found),
                Err(looked) => looked,
            };
            let why = match modelscope::download_file(RepoKind::Dataset, id, revision, file_name) {
                Ok(path) => return Ok(path),
                Err(why) if super::offline() => {
                    let urls: Vec<String> = modelscope::endpoints()
                        .iter()
                        .map(|e| {
                            let rev = revision.unwrap_or("master");
                            modelscope::file_url(e, RepoKind::Dataset, id, rev, file_name)
                        })
                        .collect();
                    format!("{why} (it would fetch {})", urls.join(" or "))
                }
                Err(why) => why,
            };
            Err(not_found(
                what,
                "ModelScope",
                id,
                &[file_name],
                &looked,
                &why,
                data_source,
            ))
        }
        Resolved::HuggingFace => {
            let file = source.hf_file(file_name);
            let looked = match hf::cached_dataset_file(id, revision, file) {
                Ok(found) => return Ok(found),
                Err(looked) => looked,
            };
            let why = match hf::try_download(|cache| {
                hf::download_dataset_file(id, revision, file, cache)
            }) {
                Ok(path) => return Ok(path),
                Err(why) if super::offline() => format!(
                    "{why} (it would fetch {}/datasets/{id}/resolve/{}/{file})",
                    hf::endpoint(),
                    revision.unwrap_or("main")
                ),
                Err(why) => why,
            };
            Err(not_found(
                what,
                "Hugging Face",
                id,
                &[file],
                &looked,
                &why,
                data_source,
            ))
        }
    }
}

/// `file_name` inside the folder `dir` (evalscope's local hub: the file must be there).
fn local_file(what: &str, dir: &Path, file_name: &str) -> Result<PathBuf, String> {
    let candidate = dir.join(file_name);
    if candidate.is_file() && super::safe_repo_path(file_name) {
        return Ok(candidate);
    }
    Err(format!(
        "{what}: Dataset file {file_name} was not found in {}. Point --dataset-path at the file (or a folder holding it)",
        dir.display()
    ))
}

/// The data files of `source` that `keep` selects (evalscope's `load_hub_dataset` for a dataset of JSON
/// files): the folder `--dataset-path` names (its files, any depth), else the hub copy — the cached
/// snapshot when there is one, else downloaded.
pub fn hub_dataset_files(
    what: &str,
    source: &DatasetSource,
    dataset_path: Option<&Path>,
    data_source: DataSource,
    keep: fn(&str) -> bool,
) -> Result<Vec<PathBuf>, String> {
    if let Some(path) = dataset_path {
        return local_files(what, path, keep);
    }
    let (hub, id, revision) = source.resolve(data_source);
    match hub {
        Resolved::Local => local_files(what, Path::new(id), keep),
        Resolved::ModelScope => {
            let mut looked = Vec::new();
            if let Some(dir) = cache::cached_snapshot(RepoKind::Dataset, id, revision) {
                let files = select(&dir, keep);
                if !files.is_empty() {
                    return Ok(files);
                }
                looked.push(dir);
            } else if let Some(root) = cache::modelscope_root() {
                looked.push(cache::repo_dir(&root, RepoKind::Dataset, id).join("snapshots"));
            }
            let why = match modelscope::download_selected(RepoKind::Dataset, id, revision, keep) {
                Ok(files) => return Ok(files),
                Err(why) => why,
            };
            Err(not_found(
                what,
                "ModelScope",
                id,
                &["its data files (*.json, *.jsonl)"],
                &looked,
                &why,
                data_source,
            ))
        }
        Resolved::HuggingFace => {
            let mut looked = Vec::new();
            if let Some(cache) = hf::hf_hub_cache() {
                let repo = hf::dataset_repo_dir(&cache, id);
                for dir in hf::snapshots(&repo, revision) {
                    let files = select(&dir, keep);
                    if !files.is_empty() {
                        return Ok(files);
                    }
                }
                looked.push(repo.join("snapshots"));
            }
            let rev = revision.unwrap_or("main");
            let why = match hf::try_download(|cache| hf::download_dataset(id, rev, keep, cache)) {
                Ok(dir) => return Ok(select(&dir, keep)),
                Err(why) => why,
            };
            Err(not_found(
                what,
                "Hugging Face",
                id,
                &["its data files (*.json, *.jsonl)"],
                &looked,
                &why,
                data_source,
            ))
        }
    }
}

fn local_files(what: &str, dir: &Path, keep: fn(&str) -> bool) -> Result<Vec<PathBuf>, String> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let files = select(dir, keep);
    if files.is_empty() {
        return Err(format!(
            "{what}: no data file (*.json, *.jsonl) in {}. Point --dataset-path at the file",
            dir.display()
        ));
    }
    Ok(files)
}

/// The files under `dir` (relative paths, `/`-separated) that `keep` selects, sorted; hidden entries
/// skipped.
fn select(dir: &Path, keep: fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                if keep(&rel) {
                    found.push(p);
                }
            }
        }
    }
    found.sort();
    found
}

/// The error for a dataset that is in no cache and could not be downloaded.
fn not_found(
    what: &str,
    hub: &str,
    id: &str,
    files: &[&str],
    looked: &[PathBuf],
    why: &str,
    data_source: DataSource,
) -> String {
    let other = match data_source {
        DataSource::HuggingFace => "--data-source modelscope",
        _ => "--data-source huggingface",
    };
    let looked = if looked.is_empty() {
        "  (no cache folder)".to_string()
    } else {
        bullet_list(looked)
    };
    format!(
        "{what}: {} of the {hub} dataset {id} is in no local cache and could not be downloaded; download it first, or pass the file with --dataset-path (or try the other hub with {other}). Looked in:\n{looked}\n{why}",
        files.join(", ")
    )
}
