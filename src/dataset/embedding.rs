//! `embedding` / `embedding_batch` and `rerank` from a local file (spec §3):
//! * embedding inputs: `.txt` (one per non-empty line), `.json` (a list of strings or of objects with
//!   `text`, `input`, `sentence` or `content`), `.jsonl` (one string or such object per line); each is
//!   length-filtered; `embedding_batch` groups them `batch_size` at a time (`--extra-args`, default 8);
//! * rerank records: `.json` (a list) or `.jsonl` / `.txt` (one per line) of
//!   `{"query": …, "documents" | "passages" | "texts": […]}`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{Item, Shaper};

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => ["text", "input", "sentence", "content"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))
            .map(str::to_string),
        _ => None,
    }
}

fn records(path: &Path, text: &str) -> Result<Vec<Value>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "json" {
        return match serde_json::from_str(text) {
            Ok(Value::Array(list)) => Ok(list),
            Ok(_) => bail!("{}: expected a JSON list", path.display()),
            Err(e) => bail!("{}: not valid JSON ({e})", path.display()),
        };
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if ext == "jsonl" || line.starts_with('{') {
            out.push(
                serde_json::from_str(line).with_context(|| {
                    format!("{} line {}: not valid JSON", path.display(), n + 1)
                })?,
            );
        } else {
            out.push(Value::String(line.to_string()));
        }
    }
    Ok(out)
}

/// Embedding inputs: one string per item, or groups of `batch` strings.
pub fn embedding(
    path: &Path,
    shaper: &Shaper,
    limit: usize,
    batch: Option<usize>,
) -> Result<Vec<Item>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))?;
    let per_item = batch.unwrap_or(1);
    let mut strings: Vec<String> = Vec::new();
    for s in records(path, &text)?.iter().filter_map(text_of) {
        if strings.len() >= limit.saturating_mul(per_item) {
            break;
        }
        if shaper.fits(&s)? {
            strings.push(s);
        }
    }
    Ok(match batch {
        None => strings.into_iter().map(Item::Text).collect(),
        Some(n) => strings.chunks(n).map(|c| Item::Texts(c.to_vec())).collect(),
    })
}

/// Rerank records.
pub fn rerank(path: &Path, limit: usize) -> Result<Vec<Item>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))?;
    let mut items = Vec::new();
    for (n, r) in records(path, &text)?.into_iter().enumerate() {
        if items.len() >= limit {
            break;
        }
        let Some(query) = r.get("query").and_then(Value::as_str) else {
            bail!("{} record {}: no string \"query\"", path.display(), n + 1);
        };
        let docs = ["documents", "passages", "texts"]
            .iter()
            .find_map(|k| r.get(*k).and_then(Value::as_array));
        let Some(docs) = docs else {
            bail!(
                "{} record {}: no \"documents\" (or \"passages\" / \"texts\") list",
                path.display(),
                n + 1
            );
        };
        items.push(Item::Rerank {
            query: query.to_string(),
            documents: docs.iter().filter_map(text_of).collect(),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_embedding_file_shape() {
        let dir = tempfile::tempdir().unwrap();
        let shaper = Shaper::chars(false, (1, 100));
        let txt = dir.path().join("a.txt");
        std::fs::write(&txt, "one\n\ntwo\nthree\n").unwrap();
        assert_eq!(embedding(&txt, &shaper, 10, None).unwrap().len(), 3);
        let json = dir.path().join("a.json");
        std::fs::write(&json, r#"["x", {"sentence": "y"}, {"other": 1}]"#).unwrap();
        assert_eq!(
            embedding(&json, &shaper, 10, Some(2)).unwrap(),
            vec![Item::Texts(vec!["x".into(), "y".into()])]
        );
        let rr = dir.path().join("r.jsonl");
        std::fs::write(
            &rr,
            "{\"query\": \"q\", \"passages\": [\"a\", {\"text\": \"b\"}]}\n",
        )
        .unwrap();
        assert_eq!(
            rerank(&rr, 10).unwrap(),
            vec![Item::Rerank {
                query: "q".into(),
                documents: vec!["a".into(), "b".into()]
            }]
        );
    }
}
