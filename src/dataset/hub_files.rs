//! Which local files a dataset reads: `--dataset-path`, or the hub copy evalscope reads — the same
//! repository, file and revision (its plugins' `DatasetSource`), looked up in the ModelScope or Hugging
//! Face cache and downloaded there on first use ([`crate::hub::source`]), by `--data-source`.
//!
//! | dataset | ModelScope | Hugging Face |
//! | --- | --- | --- |
//! | `openqa` | `AI-ModelScope/HC3-Chinese` `open_qa.jsonl` | `Hello-SimpleAI/HC3-Chinese` `open_qa.jsonl` |
//! | `share_gpt_zh[_multi_turn]` | `swift/sharegpt` `common_zh_70k.jsonl` | `shareAI/ShareGPT-Chinese-English-90k` `sharegpt_jsonl/common_zh_70k.jsonl` |
//! | `share_gpt_en[_multi_turn]` | `swift/sharegpt` `common_en_70k.jsonl` | `shareAI/ShareGPT-Chinese-English-90k` `sharegpt_jsonl/common_en_70k.jsonl` |
//! | `longalpaca` | `AI-ModelScope/LongAlpaca-12k` (its JSON data files) | `Yukang/LongAlpaca-12k` |
//! | `trie_*` | `evalscope/trie-workloads` `<workload>_8k.jsonl` | the same id |
//! | `kontext_bench` | `black-forest-labs/kontext-bench` (split `test`, parquet) | the same id |
//! | `mmmu_multi_image` | `AI-ModelScope/MMMU` (`<Subject>/validation-*.parquet`) | `MMMU/MMMU` at evalscope's pinned revision |
//! | `flickr8k` | `clip-benchmark/wds_flickr8k` (`test/*.tar`) | the same id |
//! | `swe_smith` (no `--dataset-path`) | `SWE-bench/SWE-smith-trajectories` (split `tool`, parquet) | the same id |
//!
//! Of a multi-file dataset only the files of the split evalscope loads are fetched.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::hub::source::{hub_dataset_files, hub_file, DatasetSource, HubCopy, Selection};
use crate::hub::DataSource;
use crate::plan::DatasetKind;

/// `openqa` (evalscope's `OpenqaDatasetPlugin.dataset_source`).
pub const OPENQA: DatasetSource = DatasetSource {
    dataset_id: "AI-ModelScope/HC3-Chinese",
    dataset_revision: None,
    hf_dataset_id: Some("Hello-SimpleAI/HC3-Chinese"),
    hf_dataset_revision: None,
    hf_file_paths: &[],
};

/// The ShareGPT datasets, single- and multi-turn.
pub const SHAREGPT: DatasetSource = DatasetSource {
    dataset_id: "swift/sharegpt",
    dataset_revision: None,
    hf_dataset_id: Some("shareAI/ShareGPT-Chinese-English-90k"),
    hf_dataset_revision: None,
    hf_file_paths: &[
        ("common_zh_70k.jsonl", "sharegpt_jsonl/common_zh_70k.jsonl"),
        ("common_en_70k.jsonl", "sharegpt_jsonl/common_en_70k.jsonl"),
    ],
};

/// `longalpaca`.
pub const LONGALPACA: DatasetSource = DatasetSource {
    dataset_id: "AI-ModelScope/LongAlpaca-12k",
    dataset_revision: None,
    hf_dataset_id: Some("Yukang/LongAlpaca-12k"),
    hf_dataset_revision: None,
    hf_file_paths: &[],
};

/// The trie workloads.
pub const TRIE: DatasetSource = DatasetSource::same_id("evalscope/trie-workloads");

/// `kontext_bench`.
pub const KONTEXT_BENCH: DatasetSource = DatasetSource::same_id("black-forest-labs/kontext-bench");

/// `mmmu_multi_image` (evalscope pins the Hugging Face revision only).
pub const MMMU: DatasetSource = DatasetSource {
    dataset_id: "AI-ModelScope/MMMU",
    dataset_revision: None,
    hf_dataset_id: Some("MMMU/MMMU"),
    hf_dataset_revision: Some(super::hub_vision::MMMU_REVISION),
    hf_file_paths: &[],
};

/// `flickr8k`.
pub const FLICKR8K: DatasetSource = DatasetSource::same_id("clip-benchmark/wds_flickr8k");

/// `swe_smith`'s raw trajectories (live construction).
pub const SWE_SMITH: DatasetSource = DatasetSource::same_id("SWE-bench/SWE-smith-trajectories");

/// The split `swe_smith` builds its conversations from.
pub const SWE_SMITH_SPLIT: &str = "tool";

const LONGALPACA_FILES: Selection = Selection {
    keep: longalpaca_file,
    describe: "its data files (*.json, *.jsonl)",
};

const KONTEXT_FILES: Selection = Selection {
    keep: super::hub_vision::kontext_file,
    describe: "the test split's parquet files (data/test-*.parquet)",
};

const MMMU_FILES: Selection = Selection {
    keep: super::hub_vision::mmmu_file,
    describe: "the validation split's parquet files (<Subject>/validation-*.parquet)",
};

const FLICKR8K_FILES: Selection = Selection {
    keep: super::webdataset::flickr8k_file,
    describe: "the test split's webdataset shards (test/*.tar)",
};

const SWE_SMITH_FILES: Selection = Selection {
    keep: swe_smith_file,
    describe: "the tool split's parquet files (data/tool-*.parquet)",
};

/// A file of the `tool` split of SWE-smith-trajectories, named as the hub names a split's files
/// (`data/tool-00000-of-00004.parquet`, or under a `tool/` folder).
fn swe_smith_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.ends_with(".parquet")
        && (path.split('/').rev().skip(1).any(|p| p == SWE_SMITH_SPLIT)
            || base.starts_with(&format!("{SWE_SMITH_SPLIT}-"))
            || base.starts_with(&format!("{SWE_SMITH_SPLIT}_"))
            || base.starts_with(&format!("{SWE_SMITH_SPLIT}.")))
}

/// The hub copy of SWE-smith-trajectories' `tool` split (`swe_smith` without `--dataset-path`).
pub fn swe_smith_trajectories(data_source: DataSource) -> Result<HubCopy> {
    hub_dataset_files(
        "--dataset swe_smith",
        &SWE_SMITH,
        None,
        data_source,
        &SWE_SMITH_FILES,
    )
    .map_err(anyhow::Error::msg)
}

/// The source and file name of a single-file hub dataset.
fn single_file(kind: DatasetKind) -> Option<(DatasetSource, &'static str)> {
    Some(match kind {
        DatasetKind::OpenQa => (OPENQA, "open_qa.jsonl"),
        DatasetKind::ShareGptZh | DatasetKind::ShareGptZhMultiTurn => {
            (SHAREGPT, "common_zh_70k.jsonl")
        }
        DatasetKind::ShareGptEn | DatasetKind::ShareGptEnMultiTurn => {
            (SHAREGPT, "common_en_70k.jsonl")
        }
        DatasetKind::TrieAgenticCoding | DatasetKind::TrieCodeQa | DatasetKind::TrieOfficeWork => {
            (TRIE, super::trie::file_name(kind))
        }
        _ => return None,
    })
}

/// The file a single-file dataset reads: `--dataset-path` when it is a file, the dataset's file inside
/// it when it is a folder (also under `data/`), else the hub copy.
pub fn file_for(
    kind: DatasetKind,
    dataset_path: Option<&Path>,
    data_source: DataSource,
) -> Result<PathBuf> {
    let Some((source, file_name)) = single_file(kind) else {
        match dataset_path {
            Some(p) => return Ok(p.to_path_buf()),
            None => bail!("--dataset {} needs --dataset-path", kind.name()),
        }
    };
    if let Some(dir) = dataset_path.filter(|p| p.is_dir()) {
        let nested = dir.join("data").join(file_name);
        if nested.is_file() && !dir.join(file_name).is_file() {
            return Ok(nested);
        }
    }
    let what = format!("--dataset {}", kind.name());
    hub_file(&what, &source, file_name, dataset_path, data_source).map_err(anyhow::Error::msg)
}

/// A data file of the LongAlpaca copy: JSON or JSON lines, the `train` ones when the names say which
/// split a file holds (as the `datasets` library picks the `train` split's files).
fn longalpaca_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    (base.ends_with(".json") || base.ends_with(".jsonl"))
        && !matches!(base, "dataset_infos.json" | "dataset_info.json")
        && !path
            .split(['/', '-', '_', '.'])
            .any(|p| matches!(p, "test" | "validation" | "valid" | "dev"))
}

/// The files a dataset reads, in order: `--dataset-path`, or the hub copy (several data files for
/// `longalpaca`; a folder for the image datasets).
pub fn local_copy(
    kind: DatasetKind,
    dataset_path: Option<&Path>,
    data_source: DataSource,
) -> Result<Vec<PathBuf>> {
    let image_set = match kind {
        DatasetKind::KontextBench => Some((&KONTEXT_BENCH, &KONTEXT_FILES, None)),
        DatasetKind::MmmuMultiImage => Some((&MMMU, &MMMU_FILES, None)),
        DatasetKind::Flickr8k => Some((&FLICKR8K, &FLICKR8K_FILES, Some("test"))),
        _ => None,
    };
    match kind {
        DatasetKind::LongAlpaca => match dataset_path {
            Some(p) if p.is_file() => Ok(vec![p.to_path_buf()]),
            _ => hub_dataset_files(
                "--dataset longalpaca",
                &LONGALPACA,
                dataset_path,
                data_source,
                &LONGALPACA_FILES,
            )
            .map(|copy| copy.files)
            .map_err(anyhow::Error::msg),
        },
        _ if single_file(kind).is_some() => Ok(vec![file_for(kind, dataset_path, data_source)?]),
        // The image readers take the folder (or file) and pick the split's files themselves.
        _ => match (dataset_path, image_set) {
            (Some(p), _) => Ok(vec![p.to_path_buf()]),
            (None, Some((source, files, sub))) => {
                let what = format!("--dataset {}", kind.name());
                let copy = hub_dataset_files(&what, source, None, data_source, files)
                    .map_err(anyhow::Error::msg)?;
                Ok(vec![match sub {
                    Some(sub) if copy.root.is_dir() => copy.root.join(sub),
                    _ => copy.root,
                }])
            }
            (None, None) => bail!("--dataset {} needs --dataset-path", kind.name()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longalpaca_reads_the_train_json_files() {
        assert!(longalpaca_file("LongAlpaca-12k.json"));
        assert!(longalpaca_file("data/train.jsonl"));
        assert!(!longalpaca_file("README.md"));
        assert!(!longalpaca_file("dataset_infos.json"));
        assert!(!longalpaca_file("data/test-00000.json"));
    }

    #[test]
    fn swe_smith_reads_the_tool_split() {
        assert!(swe_smith_file("data/tool-00000-of-00004.parquet"));
        assert!(swe_smith_file("tool/0000.parquet"));
        assert!(!swe_smith_file("data/xml-00000-of-00004.parquet"));
        assert!(!swe_smith_file("data/ticks-00000-of-00004.parquet"));
        assert!(!swe_smith_file("tool/README.md"));
        assert!(!swe_smith_file("tools-00000.parquet"));
    }
}
