//! evalscope's `DatasetSource` and its two loaders, `download_hub_file` (one named file of the dataset:
//! `openqa`, ShareGPT, trie) and `load_hub_dataset` (the files of one split: `longalpaca`, the image
//! datasets, SWE-smith's trajectories), with the same choices:
//!
//! * `--dataset-path` a file: that file. A folder: the file of that name inside it (else an error); for
//!   `load_hub_dataset` the folder's data files.
//! * Else `--data-source` (default `modelscope`): `huggingface` takes the Hugging Face id, revision and file
//!   path when the source declares them (the ModelScope ones otherwise); `local` — or a ModelScope id that
//!   exists as a local path — reads `<id>/<file>` relative to the working directory.
//! * A hub file is looked up in that hub's cache first and downloaded there when it is missing (of a
//!   split, only its files: a snapshot missing a shard of a `-NNNNN-of-MMMMM` set counts as missing, and
//!   only the missing files are fetched); the error says which files were looked for, where, and what was
//!   fetched from where (offline: the URLs it would have fetched).

use std::path::{Path, PathBuf};

use super::cache::{self, RepoKind};
use super::error::HubError;
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
) -> Result<PathBuf, HubError> {
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
                Err(why) => why.to_string(),
            };
            Err(HubError::NotFound(not_found(
                what,
                "ModelScope",
                id,
                &[file_name],
                &looked,
                &why,
                data_source,
            )))
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
                Err(why) => why.to_string(),
            };
            Err(HubError::NotFound(not_found(
                what,
                "Hugging Face",
                id,
                &[file],
                &looked,
                &why,
                data_source,
            )))
        }
    }
}

/// `file_name` inside the folder `dir` (evalscope's local hub: the file must be there).
fn local_file(what: &str, dir: &Path, file_name: &str) -> Result<PathBuf, HubError> {
    let candidate = dir.join(file_name);
    if candidate.is_file() && super::safe_repo_path(file_name) {
        return Ok(candidate);
    }
    Err(HubError::NotFound(format!(
        "{what}: Dataset file {file_name} was not found in {}. Point --dataset-path at the file (or a folder holding it)",
        dir.display()
    )))
}

/// Which files of a repository a dataset reads (one split of evalscope's `load_hub_dataset`).
#[derive(Debug, Clone, Copy)]
pub struct Selection {
    /// Whether a repository path (`data/tool-00000-of-00004.parquet`) is one of them.
    pub keep: fn(&str) -> bool,
    /// The files in words, for errors (`its data files (*.json, *.jsonl)`).
    pub describe: &'static str,
}

/// A dataset's local copy: its folder (a cache snapshot, or the folder given) and the selected files in
/// it, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubCopy {
    /// The snapshot folder (the file itself when `--dataset-path` names one file).
    pub root: PathBuf,
    /// The selected files.
    pub files: Vec<PathBuf>,
}

/// The data files of `source` that `selection` picks (evalscope's `load_hub_dataset`): the folder
/// `--dataset-path` names (its files, any depth), else the hub copy — the cached snapshot when it holds
/// them (every shard of a `-NNNNN-of-MMMMM` set), else downloaded (only the files still missing).
pub fn hub_dataset_files(
    what: &str,
    source: &DatasetSource,
    dataset_path: Option<&Path>,
    data_source: DataSource,
    selection: &Selection,
) -> Result<HubCopy, HubError> {
    if let Some(path) = dataset_path {
        return local_files(what, path, selection);
    }
    let (hub, id, revision) = source.resolve(data_source);
    let found = |dir: &Path| {
        let files = select(dir, selection.keep);
        (!files.is_empty() && complete_shards(&files)).then(|| HubCopy {
            root: dir.to_path_buf(),
            files,
        })
    };
    match hub {
        Resolved::Local => local_files(what, Path::new(id), selection),
        Resolved::ModelScope => {
            let mut looked = Vec::new();
            if let Some(dir) = cache::cached_snapshot(RepoKind::Dataset, id, revision) {
                if let Some(copy) = found(&dir) {
                    return Ok(copy);
                }
                looked.push(dir);
            } else if let Some(root) = cache::modelscope_root() {
                looked.push(cache::repo_dir(&root, RepoKind::Dataset, id).join("snapshots"));
            }
            let kind = RepoKind::Dataset;
            let why = match modelscope::download_selected(kind, id, revision, selection.keep) {
                Ok(files) => {
                    let root = cache::modelscope_root()
                        .map(|r| cache::download_dir(&r, kind, id, revision))
                        .unwrap_or_default();
                    return Ok(HubCopy { root, files });
                }
                Err(why) if super::offline() => {
                    let rev = revision.unwrap_or("master");
                    let urls: Vec<String> = modelscope::endpoints()
                        .iter()
                        .map(|e| modelscope::listing_url(e, kind, id, rev))
                        .collect();
                    format!(
                        "{why} (it would list {} and fetch the files it names)",
                        urls.join(" or ")
                    )
                }
                Err(why) => why.to_string(),
            };
            Err(HubError::NotFound(not_found(
                what,
                "ModelScope",
                id,
                &[selection.describe],
                &looked,
                &why,
                data_source,
            )))
        }
        Resolved::HuggingFace => {
            let mut looked = Vec::new();
            if let Some(cache) = hf::hf_hub_cache() {
                let repo = hf::dataset_repo_dir(&cache, id);
                if let Some(copy) = hf::snapshots(&repo, revision).iter().find_map(|d| found(d)) {
                    return Ok(copy);
                }
                looked.push(repo.join("snapshots"));
            }
            let rev = revision.unwrap_or("main");
            let keep = selection.keep;
            let why = match hf::try_download(|cache| hf::download_dataset(id, rev, keep, cache)) {
                Ok(dir) => {
                    let files = select(&dir, keep);
                    return Ok(HubCopy { root: dir, files });
                }
                Err(why) if super::offline() => format!(
                    "{why} (it would list {}/api/datasets/{id}/revision/{rev} and fetch the files it names)",
                    hf::endpoint()
                ),
                Err(why) => why.to_string(),
            };
            Err(HubError::NotFound(not_found(
                what,
                "Hugging Face",
                id,
                &[selection.describe],
                &looked,
                &why,
                data_source,
            )))
        }
    }
}

fn local_files(what: &str, dir: &Path, selection: &Selection) -> Result<HubCopy, HubError> {
    if dir.is_file() {
        return Ok(HubCopy {
            root: dir.to_path_buf(),
            files: vec![dir.to_path_buf()],
        });
    }
    let files = select(dir, selection.keep);
    if files.is_empty() {
        return Err(HubError::NotFound(format!(
            "{what}: none of {} is in {}. Point --dataset-path at the file",
            selection.describe,
            dir.display()
        )));
    }
    Ok(HubCopy {
        root: dir.to_path_buf(),
        files,
    })
}

/// Whether every numbered shard set among `files` (`name-00000-of-00004.parquet` …) is whole, as
/// evalscope checks a cached snapshot before it reads it.
fn complete_shards(files: &[PathBuf]) -> bool {
    let mut sets: std::collections::BTreeMap<(PathBuf, String, String), (u64, Vec<u64>)> =
        std::collections::BTreeMap::new();
    for f in files {
        let Some(base) = f.file_name().and_then(|b| b.to_str()) else {
            continue;
        };
        let Some((index, count, prefix, suffix)) = shard_name(base) else {
            continue;
        };
        let key = (f.parent().unwrap_or(f).to_path_buf(), prefix, suffix);
        let entry = sets.entry(key).or_insert((count, Vec::new()));
        if entry.0 != count || index >= count || entry.1.contains(&index) {
            return false;
        }
        entry.1.push(index);
    }
    sets.values()
        .all(|(count, seen)| seen.len() as u64 == *count)
}

/// `(index, count, prefix, suffix)` of a shard name `prefix-00001-of-00004.suffix`.
fn shard_name(base: &str) -> Option<(u64, u64, String, String)> {
    let dot = base.find('.')?;
    let (stem, suffix) = base.split_at(dot);
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, index) = rest.rsplit_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if prefix.is_empty() || !digits(index) || !digits(count) {
        return None;
    }
    Some((
        index.parse().ok()?,
        count.parse().ok()?,
        prefix.to_string(),
        suffix.to_string(),
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_shards_must_all_be_there() {
        let f = |names: &[&str]| -> Vec<PathBuf> { names.iter().map(PathBuf::from).collect() };
        assert_eq!(
            shard_name("tool-00001-of-00004.parquet"),
            Some((1, 4, "tool".into(), ".parquet".into()))
        );
        assert_eq!(shard_name("LongAlpaca-12k.json"), None);
        assert!(complete_shards(&f(&[
            "d/data/tool-00000-of-00002.parquet",
            "d/data/tool-00001-of-00002.parquet",
            "d/README.json",
        ])));
        assert!(!complete_shards(&f(&[
            "d/data/tool-00001-of-00002.parquet"
        ])));
        assert!(!complete_shards(&f(&[
            "d/data/tool-00000-of-00002.parquet",
            "d/data/tool-00000-of-00003.parquet",
        ])));
        // One set per folder: each subject's validation split is whole.
        assert!(complete_shards(&f(&[
            "d/Art/validation-00000-of-00001.parquet",
            "d/Math/validation-00000-of-00001.parquet",
        ])));
    }
}
