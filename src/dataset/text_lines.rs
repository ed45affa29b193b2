//! `openqa` (JSONL, one `question` per line) and `custom` (plain lines) datasets.

use anyhow::{bail, Result};
use serde_json::Value;

use super::{Item, Shaper};

/// `openqa`: `prepare_messages(item["question"].strip())` per JSONL line.
pub fn openqa(text: &str, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if items.len() >= limit {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => bail!("line {}: not valid JSON ({e})", n + 1),
        };
        let Some(question) = value.get("question").and_then(Value::as_str) else {
            bail!("line {}: no string field \"question\"", n + 1);
        };
        items.extend(shaper.prepare(question.trim())?);
    }
    Ok(items)
}

/// `custom`: each stripped, non-empty line is a prompt.
pub fn custom(text: &str, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if items.len() >= limit {
            break;
        }
        items.extend(shaper.prepare(line)?);
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaper() -> Shaper {
        Shaper::chars(false, (0, 10))
    }

    #[test]
    fn openqa_reads_questions() {
        let items = openqa(
            "{\"question\": \" q1 \"}\n\n{\"question\": \"q2\", \"x\": 1}\n",
            &shaper(),
            10,
        )
        .unwrap();
        assert_eq!(
            items,
            vec![Item::Text("q1".into()), Item::Text("q2".into())]
        );
        assert!(openqa("{\"q\": 1}", &shaper(), 10)
            .unwrap_err()
            .to_string()
            .contains("question"));
        assert!(openqa("nope", &shaper(), 10)
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }

    #[test]
    fn custom_filters_and_limits() {
        let items = custom("a\n\nthis line is too long\nb\nc\n", &shaper(), 2).unwrap();
        assert_eq!(items, vec![Item::Text("a".into()), Item::Text("b".into())]);
    }
}
