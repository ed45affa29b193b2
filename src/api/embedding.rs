//! `openai_embedding` / `embedding` (spec §2.2) and `openai_rerank` / `rerank` (spec §2.3) request bodies:
//! `{"input": X, "model": M, **extra_args}` and `{"query": q, "documents": [...], "model": M, **extra_args}`.
//! No generation parameters, no stream: the response is one JSON body whose `usage` gives the input tokens.

use serde_json::{json, Map, Value};

use crate::dataset::Item;

/// The text parts of a message list (`content` strings, and `text` of `{"type": "text"}` parts).
fn message_texts(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        match m.get("content") {
            Some(Value::String(s)) => out.push(s.clone()),
            Some(Value::Array(parts)) => out.extend(
                parts
                    .iter()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .map(str::to_string),
            ),
            _ => {}
        }
    }
    out
}

fn finish(
    mut body: Map<String, Value>,
    model: &str,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    body.insert("model".into(), json!(model));
    for (k, v) in extra {
        body.insert(k.clone(), v.clone());
    }
    body
}

/// The embeddings body for `item`.
pub fn embedding_body(item: &Item, model: &str, extra: &Map<String, Value>) -> Map<String, Value> {
    let input = match item {
        Item::Text(t) => json!(t),
        Item::Texts(ts) => json!(ts),
        Item::Tokens(ids) => json!(ids),
        Item::Chat(messages) => {
            let mut texts = message_texts(messages);
            match texts.len() {
                0 => Value::Null,
                1 => Value::String(texts.remove(0)),
                _ => json!(texts),
            }
        }
        Item::Rerank { query, documents } => {
            let mut all = vec![query.clone()];
            all.extend(documents.iter().cloned());
            json!(all)
        }
        Item::Body(b) => {
            let mut body = b.clone();
            body.entry("model").or_insert(json!(model));
            for (k, v) in extra {
                body.entry(k.clone()).or_insert(v.clone());
            }
            return body;
        }
    };
    let mut body = Map::new();
    body.insert("input".into(), input);
    finish(body, model, extra)
}

/// The default document of a rerank request built from a single string (evalscope's).
pub const DEFAULT_DOCUMENT: &str = "This is a test document for reranking.";

/// The rerank body for `item`.
pub fn rerank_body(item: &Item, model: &str, extra: &Map<String, Value>) -> Map<String, Value> {
    let (query, documents): (String, Vec<String>) = match item {
        Item::Rerank { query, documents } => (query.clone(), documents.clone()),
        Item::Text(t) => (t.clone(), vec![DEFAULT_DOCUMENT.to_string()]),
        Item::Texts(ts) => split_query(ts.clone()),
        Item::Chat(messages) => split_query(message_texts(messages)),
        Item::Tokens(_) => (String::new(), vec![DEFAULT_DOCUMENT.to_string()]),
        Item::Body(b) => {
            let mut body = b.clone();
            body.entry("model").or_insert(json!(model));
            for (k, v) in extra {
                body.entry(k.clone()).or_insert(v.clone());
            }
            return body;
        }
    };
    let mut body = Map::new();
    body.insert("query".into(), json!(query));
    body.insert("documents".into(), json!(documents));
    finish(body, model, extra)
}

/// First string the query, the rest the documents (`[""]` when there are none).
fn split_query(mut texts: Vec<String>) -> (String, Vec<String>) {
    if texts.is_empty() {
        return (String::new(), vec![String::new()]);
    }
    let query = texts.remove(0);
    if texts.is_empty() {
        texts.push(String::new());
    }
    (query, texts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson;

    #[test]
    fn embedding_bodies() {
        let mut extra = Map::new();
        extra.insert("batch_size".into(), json!(2));
        let b = embedding_body(&Item::Texts(vec!["a".into(), "b".into()]), "m", &extra);
        assert_eq!(
            pyjson::dumps(&b),
            r#"{"input": ["a", "b"], "model": "m", "batch_size": 2}"#
        );
        let chat = Item::Chat(vec![json!({"role": "user", "content": "hi"})]);
        let b = embedding_body(&chat, "m", &Map::new());
        assert_eq!(pyjson::dumps(&b), r#"{"input": "hi", "model": "m"}"#);
    }

    #[test]
    fn rerank_bodies() {
        let item = Item::Rerank {
            query: "q".into(),
            documents: vec!["d1".into(), "d2".into()],
        };
        let b = rerank_body(&item, "m", &Map::new());
        assert_eq!(
            pyjson::dumps(&b),
            r#"{"query": "q", "documents": ["d1", "d2"], "model": "m"}"#
        );
        let b = rerank_body(&Item::Text("q".into()), "m", &Map::new());
        assert_eq!(b["documents"], json!([DEFAULT_DOCUMENT]));
        let b = rerank_body(&Item::Texts(vec!["q".into()]), "m", &Map::new());
        assert_eq!(b["documents"], json!([""]));
    }
}
