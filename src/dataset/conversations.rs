//! Real-text datasets read from local copies of the hub files evalscope downloads:
//! * `longalpaca`: the LongAlpaca-12k JSON list; each record's `instruction` is one prompt;
//! * `share_gpt_zh` / `share_gpt_en`: ShareGPT JSONL (`common_zh_70k.jsonl` / `common_en_70k.jsonl`, or a
//!   folder holding them), one conversation per line as `{"conversation": [{"human": …, "assistant": …}, …]}`
//!   or `{"conversations": [{"from": "human"|"gpt", "value": …}, …]}`. Each becomes the message history up
//!   to its last user turn (a trailing assistant turn is dropped); the last user turn is fitted/filtered.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::{Item, Shaper};

/// `longalpaca`: `prepare_messages(instruction.strip())` for each record of the JSON list.
pub fn longalpaca(path: &Path, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))?;
    let records: Vec<Value> = match serde_json::from_str(&text) {
        Ok(Value::Array(v)) => v,
        Ok(_) => bail!("{}: expected a JSON list of records", path.display()),
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}: neither a JSON list nor JSON lines", path.display()))?,
    };
    let mut items = Vec::new();
    for (n, r) in records.iter().enumerate() {
        if items.len() >= limit {
            break;
        }
        let Some(instruction) = r.get("instruction").and_then(Value::as_str) else {
            bail!(
                "{} record {}: no string \"instruction\"",
                path.display(),
                n + 1
            );
        };
        items.extend(shaper.prepare(instruction.trim())?);
    }
    Ok(items)
}

/// The ShareGPT file: `path` itself, or `file_name` inside the folder `path`.
pub(super) fn sharegpt_file(path: &Path, file_name: &str) -> Result<PathBuf> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let candidates = [path.join(file_name), path.join("data").join(file_name)];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "--dataset-path {}: no {file_name} in this folder",
                path.display()
            )
        })
}

/// `(role, text)` turns of one conversation record, as evalscope converts them: texts stripped, a turn
/// whose human text is empty skipped (with its answer), an empty answer left out.
fn turns(record: &Value) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").trim().to_string();
    if let Some(list) = record.get("conversation").and_then(Value::as_array) {
        for t in list {
            let human = text(t.get("human"));
            if human.is_empty() {
                continue;
            }
            out.push(("user", human));
            let answer = text(t.get("assistant"));
            if !answer.is_empty() {
                out.push(("assistant", answer));
            }
        }
    } else if let Some(list) = record.get("conversations").and_then(Value::as_array) {
        for t in list {
            let role = match t.get("from").and_then(Value::as_str) {
                Some("human" | "user") => "user",
                Some("gpt" | "assistant" | "chatgpt" | "bard") => "assistant",
                _ => continue,
            };
            let value = text(t.get("value"));
            if !value.is_empty() {
                out.push((role, value));
            }
        }
    }
    out
}

/// `share_gpt_zh` / `share_gpt_en`. With a `prefix_file` (chat template on) the whole conversation is
/// fitted to `target_input_len` ([`Shaper::fit_conversation`]; longer ones skipped); otherwise the last user
/// turn is fitted or filtered and the history kept as it is.
pub fn share_gpt(path: &Path, file_name: &str, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let file = sharegpt_file(path, file_name)?;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("--dataset-path {}: cannot read the file", file.display()))?;
    let whole = shaper.has_prefix() && shaper.apply_chat_template;
    let mut items = Vec::new();
    let mut too_long = 0u64;
    for (n, line) in text.lines().enumerate() {
        if items.len() >= limit {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {}: not valid JSON", file.display(), n + 1))?;
        let mut turns = turns(&record);
        while turns.last().is_some_and(|(role, _)| *role == "assistant") {
            turns.pop();
        }
        if whole {
            let messages = turns
                .into_iter()
                .map(|(role, text)| json!({"role": role, "content": text}))
                .collect::<Vec<_>>();
            if messages.is_empty() {
                continue;
            }
            match shaper.fit_conversation(messages)? {
                Some(m) => items.push(Item::Chat(m)),
                None => too_long += 1,
            }
            continue;
        }
        let Some((_, last)) = turns.pop() else {
            continue;
        };
        let Some(fitted) = shaper.fit_text(&last)? else {
            continue;
        };
        if !shaper.apply_chat_template {
            items.push(shaper.wrap_fitted(fitted));
            continue;
        }
        let mut messages: Vec<Value> = turns
            .into_iter()
            .map(|(role, text)| json!({"role": role, "content": text}))
            .collect();
        match shaper.wrap_fitted(fitted) {
            Item::Chat(last) => {
                // A system prefix goes first, before the history.
                for m in last {
                    if m["role"] == "system" {
                        messages.insert(0, m);
                    } else {
                        messages.push(m);
                    }
                }
            }
            other => items.push(other),
        }
        if !messages.is_empty() {
            items.push(Item::Chat(messages));
        }
    }
    if too_long > 0 {
        tracing::warn!(
            "{too_long} conversations of {} are longer than target_input_len and were skipped: with a prefix_file the length counts every turn, and a history is never cut",
            file.display()
        );
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharegpt_keeps_history_up_to_the_last_user_turn() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("common_en_70k.jsonl");
        std::fs::write(
            &f,
            "{\"conversation\": [{\"human\": \"hi\", \"assistant\": \"hello\"}, {\"human\": \"more\", \"assistant\": \"sure\"}]}\n{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}\n",
        )
        .unwrap();
        let shaper = Shaper::chars(true, (0, 100));
        let items = share_gpt(dir.path(), "common_en_70k.jsonl", &shaper, 10).unwrap();
        assert_eq!(
            items[0],
            Item::Chat(vec![
                json!({"role": "user", "content": "hi"}),
                json!({"role": "assistant", "content": "hello"}),
                json!({"role": "user", "content": "more"}),
            ])
        );
        assert_eq!(
            items[1],
            Item::Chat(vec![json!({"role": "user", "content": "q"})])
        );
        assert!(share_gpt(dir.path(), "common_zh_70k.jsonl", &shaper, 10).is_err());
    }

    #[test]
    fn longalpaca_reads_instructions() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("LongAlpaca-12k.json");
        std::fs::write(
            &f,
            r#"[{"instruction": " a ", "output": "x"}, {"instruction": "b"}]"#,
        )
        .unwrap();
        let items = longalpaca(&f, &Shaper::chars(false, (0, 10)), 10).unwrap();
        assert_eq!(items, vec![Item::Text("a".into()), Item::Text("b".into())]);
    }
}
