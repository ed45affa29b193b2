//! `swe_smith` (evalscope's `plugin/datasets/swe_smith.py`, pre-built mode): a local
//! `agentic_dataset.json` built from SWE-bench/SWE-smith-trajectories, read as
//! `{"conversations": [[{"messages": [...], "prompt_tokens": N, "rid": …}, …], …]}`.
//!
//! Each turn's `messages` are the delta appended to the history (used verbatim; `prompt_tokens` is only
//! metadata); the first turn's optional `rid` becomes each request's `rid` (`<rid>_t<turn>`), as evalscope's
//! multi-turn strategy does. No per-turn `max_tokens` or tool latency. A conversation without turns is
//! skipped. The list is rotated by the run's `--dataset-offset` before it is taken (see
//! [`super::multi_turn::ConversationSource::Rotated`]). Without `--dataset-path` the conversations are
//! built from the hub's trajectories instead ([`super::swe_smith_live`]). A file that is not this layout is
//! an error naming the file and the line (JSON syntax) or the conversation/turn.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::turn::{Conversation, Turn};

/// All conversations of the file, in file order; an empty conversation stays (as an empty list) so that
/// the offset rotation counts it, as evalscope's does.
pub fn conversations(path: &Path) -> Result<Vec<Conversation>> {
    tracing::info!("Loading pre-built dataset from {}", path.display());
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))?;
    let out = parse(&text).with_context(|| format!("--dataset-path {}", path.display()))?;
    if out.is_empty() {
        tracing::warn!("No conversations found in {}", path.display());
    }
    tracing::info!("Loaded {} conversations", out.len());
    Ok(out)
}

/// The conversations of an `agentic_dataset.json` text.
fn parse(text: &str) -> Result<Vec<Conversation>> {
    let data: Value = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "line {} column {}: not valid JSON ({e})",
            e.line(),
            e.column()
        )
    })?;
    let Value::Object(data) = data else {
        bail!("expected a JSON object {{\"conversations\": [[turn, …], …]}} (swe_smith's agentic_dataset.json)");
    };
    let list = match data.get("conversations") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => bail!("\"conversations\" must be a list of conversations (lists of turns)"),
    };
    list.iter()
        .enumerate()
        .map(|(i, c)| conversation(c).with_context(|| format!("conversations[{i}]")))
        .collect()
}

/// One conversation: its turns, each carrying the first turn's `rid`.
fn conversation(value: &Value) -> Result<Conversation> {
    let Value::Array(turns) = value else {
        bail!("expected a list of turns {{\"messages\": [...], \"prompt_tokens\": N}}");
    };
    let rid = turns.first().and_then(|t| t.get("rid")).and_then(rid);
    turns
        .iter()
        .enumerate()
        .map(|(n, t)| {
            let messages = messages(t).with_context(|| format!("turn {n}"))?;
            Ok(Turn {
                rid: rid.clone(),
                ..Turn::new(messages)
            })
        })
        .collect()
}

/// A turn's delta messages (`[]` when absent, as evalscope's `turn.get('messages', [])`).
fn messages(turn: &Value) -> Result<Vec<Value>> {
    let Value::Object(turn) = turn else {
        bail!("expected a turn object {{\"messages\": [...]}}");
    };
    match turn.get("messages") {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) if list.iter().all(Value::is_object) => Ok(list.clone()),
        Some(_) => {
            bail!("\"messages\" must be a list of message objects {{\"role\": …, \"content\": …}}")
        }
    }
}

/// The routing key of a conversation: a non-empty string or an integer (Python's truthy `rid`).
fn rid(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.is_i64() && n.as_i64() != Some(0) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_are_the_file_deltas_with_the_first_turns_rid() {
        let text = r#"{"conversations": [
            [{"messages": [{"role": "user", "content": "a"}], "prompt_tokens": 5, "rid": "r1"},
             {"messages": [{"role": "user", "content": "b"}, {"role": "user", "content": "c"}], "prompt_tokens": 9}],
            [],
            [{"prompt_tokens": 1}]
        ]}"#;
        let convs = parse(text).unwrap();
        assert_eq!(convs.len(), 3);
        assert_eq!(
            convs[0][1].messages,
            vec![
                json!({"role": "user", "content": "b"}),
                json!({"role": "user", "content": "c"})
            ]
        );
        assert!(convs[0].iter().all(|t| t.rid.as_deref() == Some("r1")));
        assert!(convs[0]
            .iter()
            .all(|t| t.max_tokens.is_none() && t.tool_latency_s.is_none()));
        assert!(convs[1].is_empty(), "kept for the offset rotation");
        assert_eq!(convs[2][0].messages, Vec::<Value>::new());
        assert_eq!(convs[2][0].rid, None);
        assert!(parse("{}").unwrap().is_empty());
    }

    #[test]
    fn malformed_layouts_name_the_place() {
        let err = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(err("{\n\"conversations\": [\n oops").contains("line 3"));
        assert!(err("[]").contains("expected a JSON object"));
        assert!(err(r#"{"conversations": {}}"#).contains("must be a list"));
        assert!(err(r#"{"conversations": [[], "x"]}"#).starts_with("conversations[1]"));
        let e = err(r#"{"conversations": [[{"messages": []}, {"messages": "hi"}]]}"#);
        assert!(e.contains("conversations[0]: turn 1:"), "{e}");
        assert!(e.contains("\"messages\" must be a list"), "{e}");
    }
}
