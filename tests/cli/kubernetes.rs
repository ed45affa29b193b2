//! examples/k8s-indexed-job.yaml, validated offline with `kubernetes-validate` (PyPI, installed into .venv-k8s by
//! scripts/setup_k8s_validate.sh) against the schemas of a pinned Kubernetes version, strictly (unknown fields are
//! errors); and its shard count agrees with itself. Skipped with a note without the tool, except under `CI=true`.

use std::path::Path;
use std::process::Command;

/// The Kubernetes version the manifest is validated against.
const KUBERNETES_VERSION: &str = "1.31.0";

#[test]
fn the_indexed_job_manifest_is_valid_kubernetes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = root.join("examples/k8s-indexed-job.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    // completions, parallelism and the N given to `--shard auto` are one number.
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in the manifest"))
            .trim()
            .to_string()
    };
    assert_eq!(value("completions:"), value("parallelism:"));
    let shards_env = text
        .split("name: LLMPERF_SHARDS")
        .nth(1)
        .and_then(|rest| rest.lines().find_map(|l| l.trim().strip_prefix("value:")))
        .expect("LLMPERF_SHARDS value")
        .trim()
        .trim_matches('"')
        .to_string();
    assert_eq!(shards_env, value("completions:"));
    assert!(text.contains("completionMode: Indexed") && text.contains("- auto"));

    let tool = root.join(".venv-k8s/bin/kubernetes-validate");
    if !tool.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {} is missing: run scripts/setup_test_deps.sh",
            tool.display()
        );
        eprintln!(
            "note: skipping the Kubernetes schema check: run scripts/setup_k8s_validate.sh first"
        );
        return;
    }
    let out = Command::new(&tool)
        .args(["--strict", "--kubernetes-version", KUBERNETES_VERSION])
        .arg(&manifest)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(said.matches("passed").count(), 3, "{said}");
}
