//! Webdataset image datasets from local copies of their hub files:
//! * `flickr8k`: the webdataset shards of `clip-benchmark/wds_flickr8k` — `--dataset-path` is a `.tar` shard
//!   or a folder searched recursively for `.tar` shards (the hub copy keeps the test split as
//!   `test/<n>.tar`). Files of one sample share a key (the name up to the first dot of its base name); a
//!   sample with an image (`.jpg`, `.jpeg`, `.png`, `.webp`) and a caption (`.txt`) becomes one user message
//!   `[text, image as a base64 data URL]`, as evalscope sends it (chat template or not).
//!
//! `kontext_bench` and `mmmu_multi_image` (parquet hub copies) live in `hub_vision.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use serde_json::json;

use super::Item;

const BLOCK: usize = 512;

/// One webdataset sample being assembled: its image (MIME type, bytes) and its caption.
type Sample = (Option<(&'static str, Vec<u8>)>, Option<String>);

/// The regular files of a tar archive, `(name, bytes)`, in archive order (ustar and GNU long names).
pub fn tar_entries(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut long_name: Option<String> = None;
    while pos + BLOCK <= bytes.len() {
        let h = &bytes[pos..pos + BLOCK];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let field = |a: usize, b: usize| {
            let f = &h[a..b];
            let end = f.iter().position(|&c| c == 0).unwrap_or(f.len());
            String::from_utf8_lossy(&f[..end]).into_owned()
        };
        let size_text = field(124, 136);
        let size = usize::from_str_radix(size_text.trim(), 8)
            .with_context(|| format!("bad tar header at byte {pos} (size {size_text:?})"))?;
        let data_start = pos + BLOCK;
        let data_end = data_start + size;
        if data_end > bytes.len() {
            bail!("truncated tar archive (entry at byte {pos})");
        }
        let data = &bytes[data_start..data_end];
        let name = match long_name.take() {
            Some(n) => n,
            None => {
                let prefix = if &h[257..262] == b"ustar" {
                    field(345, 500)
                } else {
                    String::new()
                };
                let name = field(0, 100);
                if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                }
            }
        };
        match h[156] {
            b'0' | 0 => out.push((name, data.to_vec())),
            b'L' => {
                let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
                long_name = Some(String::from_utf8_lossy(&data[..end]).into_owned());
            }
            _ => {}
        }
        pos = data_start + size.div_ceil(BLOCK) * BLOCK;
    }
    Ok(out)
}

/// A file of the hub copy of `flickr8k` that evalscope reads: the `test` split's shards.
pub(super) fn flickr8k_file(path: &str) -> bool {
    path.starts_with("test/") && path.ends_with(".tar")
}

/// The `.tar` shards under `path` (or `path` itself when it is a file), sorted by path.
fn shards(path: &Path) -> Result<Vec<PathBuf>> {
    super::files::with_extension(path, "tar")
}

fn mime(ext: &str) -> Option<&'static str> {
    match ext {
        "jpg" | "jpeg" => Some("image/jpeg"),
        "png" => Some("image/png"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// `flickr8k` samples from webdataset shards.
pub fn flickr8k(path: &Path, limit: usize) -> Result<Vec<Item>> {
    let files = shards(path)?;
    if files.is_empty() {
        bail!(
            "--dataset-path {}: no .tar shards (expected the webdataset files of clip-benchmark/wds_flickr8k, e.g. test/0.tar)",
            path.display()
        );
    }
    let mut items = Vec::new();
    for shard in files {
        let bytes =
            std::fs::read(&shard).with_context(|| format!("reading {}", shard.display()))?;
        let mut samples: BTreeMap<String, Sample> = BTreeMap::new();
        let mut order = Vec::new();
        for (name, data) in tar_entries(&bytes).with_context(|| shard.display().to_string())? {
            let base_start = name.rfind('/').map_or(0, |i| i + 1);
            let Some(dot) = name[base_start..].find('.') else {
                continue;
            };
            let (key, ext) = (
                name[..base_start + dot].to_string(),
                name[base_start + dot + 1..].to_ascii_lowercase(),
            );
            let entry = samples.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                (None, None)
            });
            if let Some(m) = mime(&ext) {
                entry.0 = Some((m, data));
            } else if ext == "txt" {
                entry.1 = Some(String::from_utf8_lossy(&data).trim().to_string());
            }
        }
        for key in order {
            if items.len() >= limit {
                return Ok(items);
            }
            if let Some((Some((m, image)), Some(text))) = samples.remove(&key) {
                let url = format!(
                    "data:{m};base64,{}",
                    base64::engine::general_purpose::STANDARD.encode(image)
                );
                items.push(Item::Chat(vec![json!({"role": "user", "content": [
                    {"type": "text", "text": text},
                    {"type": "image_url", "image_url": {"url": url}},
                ]})]));
            }
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        let mut h = vec![0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        let s = format!("{size:011o}\0");
        h[124..136].copy_from_slice(s.as_bytes());
        h[156] = b'0';
        h
    }

    #[test]
    fn reads_tar_entries_and_groups_samples() {
        let mut tar = Vec::new();
        for (name, data) in [
            ("a/1.jpg", &b"IMG"[..]),
            ("a/1.txt", b"a dog"),
            ("a/2.txt", b"no image"),
        ] {
            tar.extend(header(name, data.len()));
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(BLOCK) * BLOCK, 0);
        }
        tar.extend(vec![0u8; 2 * BLOCK]);
        let entries = tar_entries(&tar).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1], ("a/1.txt".to_string(), b"a dog".to_vec()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("test")).unwrap();
        std::fs::write(dir.path().join("test/0.tar"), &tar).unwrap();
        let items = flickr8k(dir.path(), 10).unwrap();
        assert_eq!(items.len(), 1);
        let Item::Chat(m) = &items[0] else { panic!() };
        assert_eq!(m[0]["content"][0]["text"], "a dog");
        assert_eq!(
            m[0]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,SU1H"
        );
    }
}
