//! Finding a dataset's files under `--dataset-path` or a cache snapshot: every file with a given extension
//! below a folder (hidden folders such as `.cache` skipped), or the path itself when it is a file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Every `.{ext}` file under `path` (or `path` itself when it is a file), sorted by path; hidden entries
/// (names starting with `.`) are skipped.
pub(super) fn with_extension(path: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let p = e?.path();
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'));
            if hidden {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|x| x.to_str()) == Some(ext) {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}
