//! `line_by_line`: each non-empty line is a plain prompt, a JSON message array, or a whole JSON body. A
//! body's `tools`, `tool_choice` and `response_format` are checked as it is read (every schema compiled):
//! a bad one is an error naming its line.

use anyhow::{anyhow, bail, Result};
use serde_json::Value;

use super::{Item, Shaper};

/// Parses the file: JSON array → messages verbatim; JSON object → whole body; anything else → a prompt
/// (length-filtered).
pub fn parse(text: &str, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if items.len() >= limit {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let parsed = if line.starts_with('[') || line.starts_with('{') {
            serde_json::from_str::<Value>(line).ok()
        } else {
            None
        };
        if parsed.is_some() && shaper.fit.is_some() {
            bail!("--dataset-args target_input_len cannot fit the JSON lines of line_by_line (message lists and whole bodies); use plain-text lines");
        }
        match parsed {
            Some(Value::Array(messages)) => items.push(Item::Chat(messages)),
            Some(Value::Object(body)) => {
                crate::structured::check_body(&body).map_err(|e| anyhow!("line {}: {e}", n + 1))?;
                items.push(Item::Body(body));
            }
            _ => items.extend(shaper.prepare(line)?),
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_kinds_of_lines() {
        let shaper = Shaper::chars(true, (0, 1000));
        let text = "plain prompt\n[{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"}]\n{\"messages\": [{\"role\": \"user\", \"content\": \"b\"}], \"max_tokens\": 8}\n[not json\n";
        let items = parse(text, &shaper, 10).unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[0],
            Item::Chat(vec![json!({"role": "user", "content": "plain prompt"})])
        );
        assert!(matches!(&items[1], Item::Chat(m) if m.len() == 2));
        match &items[2] {
            Item::Body(b) => {
                assert_eq!(b.keys().collect::<Vec<_>>(), vec!["messages", "max_tokens"])
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            items[3],
            Item::Chat(vec![json!({"role": "user", "content": "[not json"})])
        );
    }
}
