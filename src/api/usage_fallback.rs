//! Token counts for responses that carried no usage: counted with `--tokenizer-path` once per finished
//! request, by the aggregator (never per chunk, never on the request path), as evalscope's
//! `parse_responses` fallback does (spec §2.1–2.3):
//! * input: the chat template rendered with the generation prompt (plus `ceil(h/p)·ceil(w/p)` per image;
//!   a tokenizer without a chat template fails the request with the ways out, where evalscope aborts),
//!   or the encoded prompt text, or the length of a token-id prompt; embeddings/rerank: the encoded
//!   `input` / query and documents, after the server's `usage.total_tokens` when it sent only that; a
//!   rerank reply without usage and without a tokenizer counts 0 (evalscope keeps it a success);
//! * output: per choice index, the encoded text (content + reasoning) of every kept chunk, summed;
//! * the Responses API: as its own plugin counts ([`super::responses::count_with_tokenizer`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::record::{FailureKind, RequestRecord};
use crate::tokenizer::Tokenizer;

/// Fills missing usage in finished records.
#[derive(Clone, Default)]
pub struct UsageFallback {
    /// The tokenizer, when one was given.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Embedding / rerank API (input tokens only).
    pub input_only: bool,
    /// `chat_template_kwargs` for rendering messages.
    pub template_kwargs: Map<String, Value>,
    /// Image token estimate: `(width, height, patch size)`.
    pub image_patch: (u32, u32, u32),
    /// The Responses API: count its `input` and its output deltas ([`super::responses`]).
    pub responses: bool,
    /// The rerank API: a reply without usage and without a tokenizer counts 0 input tokens and succeeds,
    /// as evalscope's rerank plugin keeps it (rerank servers often report no usage); every other API fails
    /// such a reply.
    pub rerank: bool,
}

const NO_USAGE: &str =
    "the response carried no token usage (`usage`), and no tokenizer is configured to count tokens (pass --tokenizer-path)";

impl UsageFallback {
    /// Whether a success without usage can still be counted (so the client must not fail it).
    pub fn can_count(&self) -> bool {
        self.tokenizer.is_some() || self.input_only
    }

    /// Fills `record.usage` when a successful response reported none; fails the record when it cannot.
    pub fn fill(&self, r: &mut RequestRecord) {
        if !r.success || r.usage.prompt_tokens.is_some() || r.usage.completion_tokens.is_some() {
            return;
        }
        if self.input_only {
            let total = r.responses().find_map(total_tokens);
            if let Some(total) = total {
                r.usage.prompt_tokens = Some(total);
                r.usage.completion_tokens = Some(0);
                return;
            }
        }
        let Some(tok) = &self.tokenizer else {
            if self.rerank {
                r.usage.prompt_tokens = Some(0);
                r.usage.completion_tokens = Some(0);
                return;
            }
            let at = r.completed_at;
            r.fail(FailureKind::BadResponse, NO_USAGE, at);
            return;
        };
        if self.responses {
            let (prompt, completion) = super::responses::count_with_tokenizer(tok, r);
            r.usage.prompt_tokens = Some(prompt);
            r.usage.completion_tokens = Some(completion);
            return;
        }
        let body: Value = serde_json::from_str(&r.request).unwrap_or(Value::Null);
        let prompt = match self.count_input(tok, &body) {
            Ok(n) => n,
            Err(e) => {
                let at = r.completed_at;
                r.fail(FailureKind::BadResponse, format!("{e:#}"), at);
                return;
            }
        };
        let completion = if self.input_only {
            0
        } else {
            count_output(tok, r)
        };
        r.usage.prompt_tokens = Some(prompt);
        r.usage.completion_tokens = Some(completion);
    }

    /// A counter for the simulator (`--api mock` with `--tokenizer-path`, `serve-mock --tokenizer-path`):
    /// the prompt tokens of a chat or completions body as a server with this tokenizer counts them, the
    /// body's own `chat_template_kwargs` over this fallback's. `None` without a tokenizer.
    pub fn prompt_counter(&self) -> Option<crate::sim::PromptCounter> {
        self.tokenizer.as_ref()?;
        let this = self.clone();
        Some(crate::sim::PromptCounter::new(move |body| {
            let tok = this.tokenizer.as_deref()?;
            let body: Value = serde_json::from_slice(body).ok()?;
            match body.get("chat_template_kwargs") {
                Some(Value::Object(kwargs)) => {
                    let mut with = this.clone();
                    with.template_kwargs.extend(kwargs.clone());
                    with.count_input(tok, &body).ok()
                }
                _ => this.count_input(tok, &body).ok(),
            }
        }))
    }

    /// Input tokens of `body`; messages go through the chat template, which fails (naming the ways out)
    /// when the tokenizer has none or it rejects them, as evalscope's `tokenize_chat_messages` does.
    fn count_input(&self, tok: &Tokenizer, body: &Value) -> anyhow::Result<u64> {
        let count = |s: &str| tok.count(s).unwrap_or(0) as u64;
        let count_value = |v: &Value| -> u64 {
            match v {
                Value::String(s) => count(s),
                Value::Array(items) if items.iter().all(Value::is_u64) => items.len() as u64,
                Value::Array(items) => items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => count(s),
                        Value::Array(ids) => ids.len() as u64,
                        // A rerank document given as `{"text": …}`.
                        Value::Object(o) => o.get("text").and_then(Value::as_str).map_or(0, count),
                        _ => 0,
                    })
                    .sum(),
                _ => 0,
            }
        };
        if let Some(Value::Array(messages)) = body.get("messages") {
            let mut images = 0u64;
            let flat: Vec<Value> = messages
                .iter()
                .map(|m| {
                    let mut m = m.clone();
                    if let Some(Value::Array(parts)) = m.get("content").cloned() {
                        let mut text = String::new();
                        for p in &parts {
                            match p.get("type").and_then(Value::as_str) {
                                Some("text") => text
                                    .push_str(p.get("text").and_then(Value::as_str).unwrap_or("")),
                                Some("image_url") => images += 1,
                                _ => {}
                            }
                        }
                        m["content"] = json!(text);
                    }
                    m
                })
                .collect();
            let (w, h, p) = self.image_patch;
            let per_image = u64::from(h.div_ceil(p.max(1))) * u64::from(w.div_ceil(p.max(1)));
            let text_tokens = tok.chat_token_count(&flat, &self.template_kwargs)? as u64;
            return Ok(text_tokens + images * per_image);
        }
        if let Some(p) = body.get("prompt") {
            return Ok(count_value(p));
        }
        if let Some(i) = body.get("input") {
            return Ok(count_value(i));
        }
        let query = body.get("query").map_or(0, count_value);
        let docs = body.get("documents").map_or(0, count_value);
        Ok(query + docs)
    }
}

/// `usage.total_tokens` of an embeddings / rerank response.
fn total_tokens(payload: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(payload).ok()?;
    let u = v.get("usage")?;
    u.get("prompt_tokens")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .or_else(|| u.get("total_tokens").and_then(Value::as_u64))
}

/// Output tokens: per choice index, the encoded concatenation of its text pieces, summed.
fn count_output(tok: &Tokenizer, r: &RequestRecord) -> u64 {
    let mut texts: BTreeMap<u64, String> = BTreeMap::new();
    for payload in r.responses() {
        let Ok(v) = serde_json::from_slice::<Value>(payload) else {
            continue;
        };
        for c in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
            let text = texts.entry(index).or_default();
            if let Some(t) = c.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
            for part in [c.get("delta"), c.get("message")].into_iter().flatten() {
                if let Some(t) = part.get("content").and_then(Value::as_str) {
                    text.push_str(t);
                }
                let reasoning = part
                    .get("reasoning_content")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .or_else(|| part.get("reasoning").and_then(Value::as_str));
                if let Some(t) = reasoning {
                    text.push_str(t);
                }
            }
        }
    }
    texts
        .values()
        .map(|t| tok.count(t).unwrap_or(0) as u64)
        .sum()
}
