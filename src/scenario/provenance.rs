//! Where an AgentX data set comes from, and proof that it is the pinned one: evalscope's table of the two
//! variants (ModelScope and Hugging Face ids, pinned revisions, the sha256 of `traces.jsonl`), the lookup
//! of `traces.jsonl` (`--dataset-path` folder, else the ModelScope or Hugging Face cache, else a download
//! of the pinned revision from that hub), and the checksum. In benchmark mode a file whose sha256 is not
//! the pinned one is refused, naming the file; a smoke run records it as unverified.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::config::Variant;
use super::error::ScenarioError;

/// The pinned copies of one variant (evalscope 1.14.1's `_DATASETS`).
#[derive(Debug)]
pub struct DatasetSpec {
    /// ModelScope data set id.
    pub modelscope_id: &'static str,
    /// Its pinned revision.
    pub modelscope_revision: &'static str,
    /// Hugging Face data set id.
    pub huggingface_id: &'static str,
    /// Its pinned revision.
    pub huggingface_revision: &'static str,
    /// sha256 of `traces.jsonl`.
    pub sha256: &'static str,
}

const K256: DatasetSpec = DatasetSpec {
    modelscope_id: "evalscope/cc-traces-weka-062126-256k",
    modelscope_revision: "a97a07a0474f9287023827b89a1478e52f1917da",
    huggingface_id: "semianalysisai/cc-traces-weka-062126-256k",
    huggingface_revision: "8fecd2fc56694469f758f0afbbb6335ad3043740",
    sha256: "e39cd2ff3eba21d4a3664be51da743ac3d2149a1933898cafc7bfeac8147eeef",
};

const FULL: DatasetSpec = DatasetSpec {
    modelscope_id: "evalscope/cc-traces-weka-062126",
    modelscope_revision: "c73c455b0ef068dc2cdf7e85b6cf24696925eea4",
    huggingface_id: "semianalysisai/cc-traces-weka-062126",
    huggingface_revision: "23f152f6f0f9399a85901b89a6458def0ef16729",
    sha256: "29b6a19e751ff5230771519aab755f80a0f43a4ba9cf96b72d3a6a437ec99276",
};

/// The pinned copies of `variant`.
pub fn spec(variant: Variant) -> &'static DatasetSpec {
    match variant {
        Variant::K256 => &K256,
        Variant::Full => &FULL,
    }
}

/// The data set a run replays (evalscope's `AgentXDatasetProvenance`).
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// `modelscope`, `huggingface` or `local`.
    pub source: String,
    /// Hub id, or the real path of `--dataset-path`.
    pub dataset_id: String,
    /// The pinned revision (`None` for a local folder).
    pub revision: Option<String>,
    /// `traces.jsonl`.
    pub trace_file: PathBuf,
    /// Its sha256.
    pub sha256: String,
    /// It is the pinned file.
    pub verified: bool,
}

impl Provenance {
    /// As evalscope's summary writes it.
    pub fn to_json(&self) -> Value {
        json!({
            "source": self.source,
            "dataset_id": self.dataset_id,
            "revision": self.revision,
            "trace_file": self.trace_file.to_string_lossy(),
            "sha256": self.sha256,
            "verified": self.verified,
        })
    }
}

/// The hex sha256 of `path`'s bytes.
pub fn sha256_file(path: &Path) -> Result<String, ScenarioError> {
    let io = |action, reason| ScenarioError::Io {
        path: path.to_path_buf(),
        action,
        reason,
    };
    let mut file = std::fs::File::open(path).map_err(|e| io("open", e))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| io("read", e))?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(ctx
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `traces.jsonl` of the pinned revision in the local hub caches, or downloaded from that hub into its
/// cache (ModelScope by default, as evalscope); `Err` names where it looked and why the download failed.
fn hub_copy(spec: &DatasetSpec, source: &str) -> Result<PathBuf, ScenarioError> {
    let mut looked = Vec::new();
    if source == "modelscope" {
        return modelscope_copy(spec);
    }
    if let Some(cache) = crate::hub::hf_hub_cache() {
        let repo = cache.join(format!(
            "datasets--{}",
            spec.huggingface_id.replace('/', "--")
        ));
        let file = repo
            .join("snapshots")
            .join(spec.huggingface_revision)
            .join("traces.jsonl");
        if file.is_file() {
            return Ok(file);
        }
        looked.push(file);
    }
    let download = match crate::hub::try_download(|cache| {
        tracing::info!(
            "--scenario agentx: downloading {} traces.jsonl from the Hugging Face hub",
            spec.huggingface_id
        );
        crate::hub::download_dataset(
            spec.huggingface_id,
            spec.huggingface_revision,
            |f| f == "traces.jsonl",
            cache,
        )
    }) {
        Ok(dir) => return Ok(dir.join("traces.jsonl")),
        Err(why) => why.to_string(),
    };
    Err(ScenarioError::Dataset(format!(
        "--scenario agentx: {} (revision {}) is not in the Hugging Face cache. Looked in:\n{}\n{download}. Pass its folder as --dataset-path",
        spec.huggingface_id,
        spec.huggingface_revision,
        crate::hub::bullet_list(&looked)
    )))
}

/// `traces.jsonl` of the pinned ModelScope revision: in the ModelScope cache, else downloaded into it.
fn modelscope_copy(spec: &DatasetSpec) -> Result<PathBuf, ScenarioError> {
    use crate::hub::cache::{cached_file, RepoKind};
    let (id, revision) = (spec.modelscope_id, spec.modelscope_revision);
    let looked = match cached_file(RepoKind::Dataset, id, Some(revision), "traces.jsonl") {
        Ok(file) => return Ok(file),
        Err(looked) => looked,
    };
    tracing::info!(
        "--scenario agentx: downloading {id} traces.jsonl (revision {revision}) from ModelScope"
    );
    let why = match crate::hub::modelscope::download_file(
        RepoKind::Dataset,
        id,
        Some(revision),
        "traces.jsonl",
    ) {
        Ok(file) => return Ok(file),
        Err(why) => why,
    };
    Err(ScenarioError::Dataset(format!(
        "--scenario agentx: {id} (revision {revision}) is not in the ModelScope cache. Looked in:\n{}\n{why}. Use --data-source huggingface, or pass its folder as --dataset-path",
        crate::hub::bullet_list(&looked)
    )))
}

/// Finds and checks the trace file of `variant`: `dataset_path` (a folder holding `traces.jsonl`) first,
/// else the hub `data_source` names (ModelScope by default).
pub fn resolve(
    variant: Variant,
    benchmark: bool,
    dataset_path: Option<&str>,
    data_source: Option<&str>,
) -> Result<Provenance, ScenarioError> {
    let spec = spec(variant);
    let source = match (dataset_path, data_source) {
        (Some(_), _) => "local",
        (None, None) => "modelscope",
        (None, Some(s)) if s == "modelscope" || s == "huggingface" || s == "local" => s,
        (None, Some(other)) => {
            return Err(ScenarioError::Dataset(format!(
                "--data-source {other:?}: unsupported AgentX data source (modelscope, huggingface or local)"
            )))
        }
    };
    let (trace_file, dataset_id, revision) = match dataset_path {
        Some(path) => {
            let root = Path::new(path);
            let file = if root.is_dir() {
                root.join("traces.jsonl")
            } else {
                root.to_path_buf()
            };
            if !file.is_file() {
                return Err(ScenarioError::Dataset(format!(
                    "--dataset-path {path}: an AgentX dataset must contain traces.jsonl"
                )));
            }
            let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
            (file, real.to_string_lossy().into_owned(), None)
        }
        None if source == "local" => {
            return Err(ScenarioError::Dataset(
                "--data-source local needs --dataset-path (the folder holding traces.jsonl)".into(),
            ))
        }
        None => {
            let file = hub_copy(spec, source)?;
            let (id, rev) = if source == "modelscope" {
                (spec.modelscope_id, spec.modelscope_revision)
            } else {
                (spec.huggingface_id, spec.huggingface_revision)
            };
            (file, id.to_string(), Some(rev.to_string()))
        }
    };
    let sha256 = sha256_file(&trace_file)
        .map_err(|e| ScenarioError::Dataset(format!("--scenario agentx: {e}")))?;
    let verified = sha256 == spec.sha256;
    if benchmark && !verified {
        return Err(ScenarioError::HashMismatch {
            file: trace_file,
            sha256,
            variant: variant.as_str(),
            pinned: spec.sha256,
        });
    }
    if !verified {
        tracing::warn!(
            "--scenario agentx: {} is not the pinned {} traces.jsonl (sha256 {sha256}); the smoke run records it as unverified",
            trace_file.display(),
            variant.as_str()
        );
    }
    Ok(Provenance {
        source: source.to_string(),
        dataset_id,
        revision,
        trace_file,
        sha256,
        verified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("traces.jsonl");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            sha256_file(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let e = resolve(
            Variant::K256,
            true,
            Some(dir.path().to_str().unwrap()),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("hash mismatch") && e.contains("traces.jsonl"),
            "{e}"
        );
        let p = resolve(
            Variant::Full,
            false,
            Some(dir.path().to_str().unwrap()),
            None,
        )
        .unwrap();
        assert_eq!(
            (p.source.as_str(), p.verified, p.revision),
            ("local", false, None)
        );
    }
}
