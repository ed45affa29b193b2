//! Test-only helpers shared by unit tests: where the read-only `shared/` folder (evalscope goldens, real
//! tokenizers) is — `$LLMPERF_SHARED_DIR`, else `../shared` beside the crate.

use std::path::{Path, PathBuf};

/// The shared folder.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("LLMPERF_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// `<shared>/tokenizers/<name>`: a real tokenizer folder.
pub fn tokenizer_dir(name: &str) -> PathBuf {
    shared_dir().join("tokenizers").join(name)
}

/// `<shared>/reference/evalscope-golden`; panics with a hint when it is missing (never skips silently).
pub fn golden_root() -> PathBuf {
    let root = shared_dir().join("reference/evalscope-golden");
    assert!(
        root.is_dir(),
        "golden outputs not found at {} (set LLMPERF_SHARED_DIR to the shared folder)",
        root.display()
    );
    root
}
