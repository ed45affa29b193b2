//! The OpenAI Responses API (`--api openai_responses`, `openai_response`, `responses`; `POST /v1/responses`),
//! as evalscope 1.14.1's `openai_responses_api.py` speaks it (spec §2.4):
//! * body: `{"input": …}` (chat messages with their content parts renamed to `input_text` / `input_image`),
//!   then `model`, `max_output_tokens`, `stream`, `temperature`, `top_p`, and `--extra-args` last; no
//!   `stream_options` and none of the chat-only parameters;
//! * stream: every JSON event is kept; `response.output_text.delta`, `response.refusal.delta`,
//!   `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` with a non-empty `delta`
//!   are output (TTFT, ITL between output events); `response.completed` (or `response.incomplete`) carries
//!   the usage (`input_tokens` / `output_tokens`, or
//!   the chat names); `response.failed` and `error` fail the request;
//! * whole body: a response object, failed when its `status` is `failed`;
//! * the tokenizer fallback when the server sent no usage: the `input` text encoded, and the deltas (or the
//!   final response text) encoded.

use std::time::Instant;

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::dataset::Item;
use crate::plan::GenParams;
use crate::record::{FailureKind, RequestRecord, Usage};
use crate::tokenizer::Tokenizer;

/// The stream events whose `delta` is generated output.
pub const DELTA_EVENTS: [&str; 4] = [
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta",
];

/// The events that fail a request.
const FAILURE_EVENTS: [&str; 2] = ["response.failed", "error"];

/// The smallest `max_output_tokens` of a connection test (OpenAI rejects fewer than 16).
pub const PROBE_MIN_OUTPUT_TOKENS: u64 = 16;

/// A chat content part in the Responses API's spelling: `text` → `input_text`, `image_url` → `input_image`.
fn normalize_part(part: &Value) -> Value {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => {
            json!({"type": "input_text", "text": part.get("text").cloned().unwrap_or(json!(""))})
        }
        Some("image_url") => match part.get("image_url") {
            Some(Value::String(url)) => {
                json!({"type": "input_image", "image_url": url, "detail": "auto"})
            }
            other => {
                let url = other
                    .and_then(|u| u.get("url"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let detail = other
                    .and_then(|u| u.get("detail"))
                    .cloned()
                    .unwrap_or(json!("auto"));
                json!({"type": "input_image", "image_url": url, "detail": detail})
            }
        },
        _ => part.clone(),
    }
}

/// evalscope's `normalize_responses_input`: a message list with list contents renamed part by part; any
/// other value as it is.
pub fn normalize_input(value: Value) -> Value {
    let Value::Array(messages) = value else {
        return value;
    };
    Value::Array(
        messages
            .into_iter()
            .map(|mut m| {
                if let Some(Value::Array(parts)) = m.get("content") {
                    let parts: Vec<Value> = parts.iter().map(normalize_part).collect();
                    m["content"] = Value::Array(parts);
                }
                m
            })
            .collect(),
    )
}

/// What a dataset item sends as `input`.
fn item_input(item: &Item) -> Value {
    match item {
        Item::Text(t) => Value::String(t.clone()),
        Item::Chat(messages) => normalize_input(Value::Array(messages.clone())),
        Item::Tokens(ids) => json!(ids),
        Item::Texts(ts) => json!(ts),
        Item::Rerank { query, .. } => Value::String(query.clone()),
        Item::Body(_) => Value::Null,
    }
}

/// The request body for `item`. `template` is `--query-template` after `%m`/`%p` substitution, with
/// `fills_prompt` when it held `%p` (then no `input` is added to it).
pub fn compose(
    item: &Item,
    template: Option<(Map<String, Value>, bool)>,
    model: &str,
    params: &GenParams,
    rng: &mut impl Rng,
) -> Map<String, Value> {
    let mut body = match (item, template) {
        (_, Some((mut t, fills_prompt))) => {
            if !fills_prompt {
                let input = match item {
                    Item::Body(b) => b
                        .get("messages")
                        .cloned()
                        .map_or(Value::Null, normalize_input),
                    _ => item_input(item),
                };
                t.insert("input".into(), input);
            }
            t
        }
        (Item::Body(b), None) => {
            let mut b = b.clone();
            if b.contains_key("messages") && !b.contains_key("input") {
                let messages = b.shift_remove("messages").unwrap_or(Value::Null);
                b.insert("input".into(), normalize_input(messages));
            }
            b
        }
        (_, None) => {
            let mut m = Map::new();
            m.insert("input".into(), item_input(item));
            m
        }
    };
    body.insert("model".into(), json!(model));
    let (lo, hi) = params.max_tokens;
    let max = if lo == hi {
        lo
    } else {
        rng.random_range(lo..=hi)
    };
    body.insert("max_output_tokens".into(), json!(max));
    body.insert("stream".into(), json!(params.stream));
    body.insert("temperature".into(), json!(params.temperature));
    if let Some(v) = params.top_p {
        body.insert("top_p".into(), json!(v));
    }
    for (k, v) in &params.extra_args {
        body.insert(k.clone(), v.clone());
    }
    body
}

/// evalscope's `response_usage_from_dict`: `(input, output)` tokens of a response object, with the cached
/// input tokens when reported.
fn usage_of(response: &Value) -> Option<Usage> {
    let u = response.get("usage").filter(|u| match u {
        Value::Object(m) => !m.is_empty(),
        _ => false,
    })?;
    let pair = |a: &str, b: &str| {
        (u.get(a).is_some() || u.get(b).is_some()).then(|| {
            (
                u.get(a).and_then(Value::as_u64).or(Some(0)),
                u.get(b).and_then(Value::as_u64).or(Some(0)),
            )
        })
    };
    let (prompt_tokens, completion_tokens) = pair("input_tokens", "output_tokens")
        .or_else(|| pair("prompt_tokens", "completion_tokens"))?;
    let details = u
        .get("input_tokens_details")
        .filter(|d| d.as_object().is_some_and(|m| !m.is_empty()))
        .or_else(|| u.get("prompt_tokens_details"));
    Some(Usage {
        prompt_tokens,
        completion_tokens,
        cached_tokens: details
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64),
        reasoning_tokens: u
            .get("output_tokens_details")
            .or_else(|| u.get("completion_tokens_details"))
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64),
    })
}

/// Python truthiness of an event's `delta`.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
    }
}

fn fail_with(record: &mut RequestRecord, kind: FailureKind, text: String) {
    if record.error.is_none() {
        record.failure = Some(kind);
        record.error = Some(crate::record::one_line(&text));
    }
}

/// Applies one SSE event that arrived at `at` to `record`.
pub fn apply_stream_event(record: &mut RequestRecord, payload: &[u8], at: Instant) {
    let event: Value = match serde_json::from_slice(payload) {
        Ok(v) => v,
        Err(_) => {
            if super::openai_event::inspect(payload).malformed {
                let text = super::openai_event::describe_malformed("stream event", payload);
                fail_with(record, FailureKind::Malformed, text);
            }
            return;
        }
    };
    let Some(obj) = event.as_object() else {
        let text = super::openai_event::describe_malformed("stream event", payload);
        fail_with(record, FailureKind::Malformed, text);
        return;
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if DELTA_EVENTS.contains(&kind) && truthy(obj.get("delta")) {
        record.chunk_times.push(at);
    } else if kind == "response.completed" || kind == "response.incomplete" {
        if let Some(u) = obj.get("response").and_then(usage_of) {
            record.usage = u;
        }
    } else if FAILURE_EVENTS.contains(&kind) {
        let shown = obj.get("response").unwrap_or(&event).to_string();
        fail_with(record, FailureKind::InBandError, shown);
    }
    record.keep_response(payload);
    record.completed_at = at;
}

/// Applies a whole non-stream body; returns `false` when it was not JSON.
pub fn apply_body(record: &mut RequestRecord, body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    if v.get("status").and_then(Value::as_str) == Some("failed") {
        fail_with(
            record,
            FailureKind::InBandError,
            String::from_utf8_lossy(body).into_owned(),
        );
    }
    if let Some(u) = usage_of(&v) {
        record.usage = u;
    }
    record.keep_response(body);
    true
}

/// evalscope's `response_text_from_dict`: `output_text`, else the text and refusal parts of the message
/// items of `output`.
fn response_text(response: &Value) -> String {
    if let Some(t) = response.get("output_text").and_then(Value::as_str) {
        return t.to_string();
    }
    let mut out = String::new();
    let items = response.get("output").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        let parts = item.get("content").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let key = match part.get("type").and_then(Value::as_str) {
                Some("output_text") => "text",
                Some("refusal") => "refusal",
                _ => continue,
            };
            out.push_str(part.get(key).and_then(Value::as_str).unwrap_or(""));
        }
    }
    out
}

/// Tokens of an `input` value, as evalscope's `_count_input_value` counts them.
fn count_input_value(tok: &Tokenizer, v: &Value) -> u64 {
    let count = |s: &str| tok.count(s).unwrap_or(0) as u64;
    match v {
        Value::String(s) => count(s),
        Value::Array(items) => items.iter().map(|i| count_input_value(tok, i)).sum(),
        Value::Object(o) => match o.get("content") {
            Some(c @ (Value::String(_) | Value::Array(_))) => count_input_value(tok, c),
            _ => match o.get("type").and_then(Value::as_str) {
                Some("input_text" | "output_text") => {
                    count(o.get("text").and_then(Value::as_str).unwrap_or(""))
                }
                _ => 0,
            },
        },
        _ => 0,
    }
}

/// `(input, output)` tokens counted with `tok` for a response that reported no usage: the request's
/// `input`, and the concatenated deltas (or, without any delta event, the responses' final text).
pub fn count_with_tokenizer(tok: &Tokenizer, record: &RequestRecord) -> (u64, u64) {
    let body: Value = serde_json::from_str(&record.request).unwrap_or(Value::Null);
    let input = count_input_value(
        tok,
        body.get("input").unwrap_or(&Value::String(String::new())),
    );
    let events: Vec<Value> = record
        .responses()
        .filter_map(|p| serde_json::from_slice(p).ok())
        .collect();
    let is_delta = |e: &Value| {
        e.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| DELTA_EVENTS.contains(&t))
    };
    let has_delta = events.iter().any(is_delta);
    let mut text = String::new();
    for e in &events {
        if is_delta(e) {
            text.push_str(e.get("delta").and_then(Value::as_str).unwrap_or(""));
        } else if !has_delta {
            text.push_str(&response_text(e.get("response").unwrap_or(e)));
        }
    }
    (input, tok.count(&text).unwrap_or(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::sync::Arc;

    fn params() -> GenParams {
        GenParams {
            max_tokens: (64, 64),
            min_tokens: Some(3),
            frequency_penalty: None,
            repetition_penalty: None,
            logprobs: false,
            n_choices: None,
            seed: Some(5),
            stop: None,
            stream: true,
            stop_token_ids: None,
            temperature: 0.0,
            top_p: None,
            top_k: None,
            extra_args: Map::new(),
        }
    }

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(1)
    }

    #[test]
    fn chat_messages_become_input_in_evalscope_order() {
        let item = Item::Chat(vec![json!({"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
        ]})]);
        let mut p = params();
        p.top_p = Some(0.5);
        p.extra_args
            .insert("reasoning".into(), json!({"effort": "low"}));
        let body = compose(&item, None, "m", &p, &mut rng());
        assert_eq!(
            crate::pyjson::dumps(&body),
            r#"{"input": [{"role": "user", "content": [{"type": "input_text", "text": "what is this"}, {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"}]}], "model": "m", "max_output_tokens": 64, "stream": true, "temperature": 0.0, "top_p": 0.5, "reasoning": {"effort": "low"}}"#
        );
    }

    #[test]
    fn dataset_bodies_move_messages_to_input_and_flags_overwrite() {
        let b: Map<String, Value> = serde_json::from_str(
            r#"{"messages": [{"role": "user", "content": "hi"}], "max_output_tokens": 3, "model": "x"}"#,
        )
        .unwrap();
        let body = compose(&Item::Body(b), None, "m", &params(), &mut rng());
        assert_eq!(
            crate::pyjson::dumps(&body),
            r#"{"max_output_tokens": 64, "model": "m", "input": [{"role": "user", "content": "hi"}], "stream": true, "temperature": 0.0}"#
        );
        let t: Map<String, Value> =
            serde_json::from_str(r#"{"input": null, "store": false}"#).unwrap();
        let body = compose(
            &Item::Text("q".into()),
            Some((t, false)),
            "m",
            &params(),
            &mut rng(),
        );
        assert_eq!(body["input"], json!("q"));
        assert_eq!(body["store"], json!(false));
    }

    fn rec() -> RequestRecord {
        RequestRecord::new(0, false, Arc::from("{}"), Instant::now())
    }

    #[test]
    fn stream_events_give_output_usage_and_failures() {
        let mut r = rec();
        let t0 = Instant::now();
        let events: [&[u8]; 5] = [
            br#"{"type":"response.created","response":{"status":"in_progress"}}"#,
            br#"{"type":"response.output_text.delta","delta":"Hel"}"#,
            br#"{"type":"response.output_text.delta","delta":""}"#,
            br#"{"type":"response.reasoning_summary_text.delta","delta":"lo"}"#,
            br#"{"type":"response.completed","response":{"usage":{"input_tokens":7,"output_tokens":2,"input_tokens_details":{"cached_tokens":4}}}}"#,
        ];
        for e in events {
            apply_stream_event(&mut r, e, t0);
        }
        apply_stream_event(&mut r, b"[DONE]", t0);
        assert_eq!(r.chunk_times.len(), 2, "non-empty deltas only");
        assert_eq!(r.responses().count(), 5, "every JSON event is kept");
        assert_eq!(r.usage.prompt_tokens, Some(7));
        assert_eq!(r.usage.completion_tokens, Some(2));
        assert_eq!(r.usage.cached_tokens, Some(4));
        assert!(r.failure.is_none());

        let mut r = rec();
        apply_stream_event(
            &mut r,
            br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error"}}}"#,
            t0,
        );
        assert_eq!(r.failure, Some(FailureKind::InBandError));
        assert!(r.error.as_deref().unwrap().contains("server_error"));
        let mut r = rec();
        apply_stream_event(&mut r, br#"{"type":"error","message":"bad"}"#, t0);
        assert_eq!(r.failure, Some(FailureKind::InBandError));
        let mut r = rec();
        apply_stream_event(&mut r, br#"{"type":"response.output_te"#, t0);
        assert_eq!(r.failure, Some(FailureKind::Malformed));
    }

    #[test]
    fn whole_bodies_and_chat_usage_names() {
        let mut r = rec();
        assert!(apply_body(
            &mut r,
            br#"{"status":"completed","usage":{"prompt_tokens":3,"completion_tokens":9}}"#
        ));
        assert_eq!(r.usage.prompt_tokens, Some(3));
        assert_eq!(r.usage.completion_tokens, Some(9));
        let mut r = rec();
        assert!(apply_body(&mut r, br#"{"status":"failed","usage":{}}"#));
        assert_eq!(r.failure, Some(FailureKind::InBandError));
        assert!(!apply_body(&mut rec(), b"plain text"));
    }

    #[test]
    fn response_text_reads_messages() {
        let v = json!({"output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "content": [{"type": "output_text", "text": "a"}, {"type": "refusal", "refusal": "b"}]}
        ]});
        assert_eq!(response_text(&v), "ab");
        assert_eq!(response_text(&json!({"output_text": "x"})), "x");
    }
}
