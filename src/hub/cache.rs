//! The ModelScope cache, laid out as the `modelscope` client (1.40, `modelscope_hub`) reads and writes it.
//!
//! The root is `$MODELSCOPE_CACHE`, else `~/.cache/modelscope`. Files are downloaded to
//! `<root>/<models|datasets>/<owner>--<name>/snapshots/<revision>/<file>` (revision `master` when none is
//! given). Older clients' folders are reused when they hold anything, in the client's order:
//! `<root>/<owner>/<name>`, `<root>/<owner>/<name___>`, `<root>/hub/<owner>/<name>`,
//! `<root>/hub/<owner>/<name___>`, `<root>/<type>s/<owner>/<name>` (only while the newer layouts are
//! absent), then `<root>/<type>s/<owner>/<name___>` and `<root>/hub/<type>s/<owner>/<name___>` (`name___`:
//! the dots of the name written as `___`).
//!
//! Offline, a file is found in the old folder, else in the snapshot of the given revision, else in
//! `master` or `main`, else in the one snapshot that holds it.

use std::path::{Path, PathBuf};

use super::{env_path, home};

/// A ModelScope repository type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoKind {
    /// A model (tokenizers).
    Model,
    /// A dataset.
    Dataset,
}

impl RepoKind {
    /// The URL and cache path segment (`models`, `datasets`).
    pub fn segment(self) -> &'static str {
        match self {
            RepoKind::Model => "models",
            RepoKind::Dataset => "datasets",
        }
    }
}

/// The ModelScope cache root: `$MODELSCOPE_CACHE`, else `~/.cache/modelscope`.
pub fn modelscope_root() -> Option<PathBuf> {
    env_path("MODELSCOPE_CACHE")
        .map(|p| expand_user(&p))
        .or_else(|| home().map(|h| h.join(".cache/modelscope")))
}

fn expand_user(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), home()) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => path.to_path_buf(),
    }
}

/// The ModelScope cache roots that older clients used for models (`<root>/hub` and `<root>`), for lookups
/// of `models/<org>/<name>` and `<org>/<name>` folders.
pub fn modelscope_roots() -> Vec<PathBuf> {
    modelscope_root()
        .map(|root| vec![root.join("hub"), root])
        .unwrap_or_default()
}

fn non_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some())
}

/// `owner` and `name` of `repo` (`owner/name`).
fn split(repo: &str) -> Option<(&str, &str)> {
    repo.split_once('/')
        .filter(|(o, n)| !o.is_empty() && !n.is_empty())
}

/// The folder of `repo` in the current layout: `<root>/<type>s/<owner>--<name>`.
pub fn repo_dir(root: &Path, kind: RepoKind, repo: &str) -> PathBuf {
    root.join(kind.segment()).join(repo.replace('/', "--"))
}

/// The folder an older client left for `repo` that the current client reuses, if any.
pub fn legacy_dir(root: &Path, kind: RepoKind, repo: &str) -> Option<PathBuf> {
    let (owner, name) = split(repo)?;
    let safe = name.replace('.', "___");
    let seg = kind.segment();
    let known = [
        repo_dir(root, kind, repo),
        root.join(seg).join(owner).join(&safe),
    ];
    if !known.iter().any(|p| non_empty_dir(p)) {
        let older = [
            root.join(owner).join(name),
            root.join(owner).join(&safe),
            root.join("hub").join(owner).join(name),
            root.join("hub").join(owner).join(&safe),
            root.join(seg).join(owner).join(name),
        ];
        if let Some(found) = older.into_iter().find(|p| non_empty_dir(p)) {
            return Some(found);
        }
    }
    [
        root.join(seg).join(owner).join(&safe),
        root.join("hub").join(seg).join(owner).join(&safe),
    ]
    .into_iter()
    .find(|p| non_empty_dir(p))
}

/// The folder downloads of `repo` go to: the reused older folder, else
/// `<root>/<type>s/<owner>--<name>/snapshots/<revision or master>`.
pub fn download_dir(root: &Path, kind: RepoKind, repo: &str, revision: Option<&str>) -> PathBuf {
    match legacy_dir(root, kind, repo) {
        Some(dir) => dir,
        None => repo_dir(root, kind, repo)
            .join("snapshots")
            .join(revision.unwrap_or("master")),
    }
}

/// Where a download of `file` goes: `file` inside [`download_dir`].
pub fn download_target(
    root: &Path,
    kind: RepoKind,
    repo: &str,
    revision: Option<&str>,
    file: &str,
) -> PathBuf {
    download_dir(root, kind, repo, revision).join(file)
}

/// `file` of `repo` in the ModelScope cache, found as the client finds it offline. `Err`: the places
/// looked in.
pub fn cached_file(
    kind: RepoKind,
    repo: &str,
    revision: Option<&str>,
    file: &str,
) -> Result<PathBuf, Vec<PathBuf>> {
    let Some(root) = modelscope_root() else {
        return Err(Vec::new());
    };
    let found = |dir: &Path| dir.join(file).is_file().then(|| dir.join(file));
    let mut looked = Vec::new();
    if let Some(dir) = legacy_dir(&root, kind, repo) {
        if let Some(f) = found(&dir) {
            return Ok(f);
        }
        looked.push(dir);
    }
    let snapshots = repo_dir(&root, kind, repo).join("snapshots");
    let names: Vec<&str> = match revision {
        Some(rev) => vec![rev],
        None => vec!["master", "main"],
    };
    for name in &names {
        if let Some(f) = found(&snapshots.join(name)) {
            return Ok(f);
        }
    }
    if revision.is_none() {
        let holding: Vec<PathBuf> = snapshot_dirs(&snapshots)
            .into_iter()
            .filter_map(|d| found(&d))
            .collect();
        if let [only] = holding.as_slice() {
            return Ok(only.clone());
        }
    }
    looked.push(snapshots.join(names[0]));
    Err(looked)
}

/// The cached snapshot folder of `repo`, as the client resolves it offline: the older client's folder,
/// else the revision's snapshot, else `master` or `main`, else the only snapshot there is.
pub fn cached_snapshot(kind: RepoKind, repo: &str, revision: Option<&str>) -> Option<PathBuf> {
    let root = modelscope_root()?;
    if let Some(dir) = legacy_dir(&root, kind, repo) {
        return Some(dir);
    }
    let snapshots = repo_dir(&root, kind, repo).join("snapshots");
    if let Some(rev) = revision {
        return Some(snapshots.join(rev)).filter(|d| non_empty_dir(d));
    }
    if let Some(d) = ["master", "main"]
        .iter()
        .map(|n| snapshots.join(n))
        .find(|d| non_empty_dir(d))
    {
        return Some(d);
    }
    match snapshot_dirs(&snapshots).as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    }
}

/// The snapshot folder of model `repo` holding `file` (a tokenizer's `tokenizer.json`), as
/// [`cached_file`] finds it with no revision.
pub fn cached_model_dir(repo: &str, file: &str) -> Result<PathBuf, Vec<PathBuf>> {
    cached_file(RepoKind::Model, repo, None, file).map(|f| {
        let depth = file.split('/').count();
        f.ancestors().nth(depth).map(Path::to_path_buf).unwrap_or(f)
    })
}

/// The non-empty snapshot folders under `snapshots`, by name.
fn snapshot_dirs(snapshots: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(snapshots)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| non_empty_dir(p))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_layout_and_older_folders() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let target = download_target(r, RepoKind::Dataset, "swift/sharegpt", None, "a.jsonl");
        assert_eq!(
            target,
            r.join("datasets/swift--sharegpt/snapshots/master/a.jsonl")
        );
        // An older client's folder with dots escaped is reused.
        let old = r.join("hub/models/Qwen/Qwen2___5-7B");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("tokenizer.json"), "{}").unwrap();
        assert_eq!(legacy_dir(r, RepoKind::Model, "Qwen/Qwen2.5-7B"), Some(old));
        assert_eq!(legacy_dir(r, RepoKind::Dataset, "Qwen/Qwen2.5-7B"), None);
    }
}
