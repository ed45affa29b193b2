//! Why `llmperf compare` found no single run root under a side's folder (wrapped as that side's
//! `CompareError::NotARun`).

use std::path::PathBuf;

/// No run root, or more than one, at or under a side's folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    /// No run folder up to three levels down.
    #[error("no run folder (a folder with a run's arguments) in it or up to three levels below")]
    NoRun,
    /// Several run roots: the user names one.
    #[error("it holds {} run roots; name one: {}", .0.len(), list(.0))]
    Several(Vec<PathBuf>),
}

/// The roots, comma-separated.
fn list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
