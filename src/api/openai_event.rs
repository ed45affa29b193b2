//! Reading one OpenAI response event (an SSE `data:` payload or a whole non-stream body) into a record.
//!
//! The fast path deserialises only the fields that matter (borrowed where possible, unknown fields
//! skipped); an event whose fields have unexpected types falls back to a generic JSON walk, so no valid
//! JSON event is ever misread.
//!
//! Non-JSON events are skipped (`[DONE]`, keep-alive text), as evalscope does — except an event that starts
//! like a JSON object (`{`) or is not valid UTF-8: that is a broken event whose tokens were lost, so the
//! request fails as [`FailureKind::Malformed`] (evalscope skips it silently and reports wrong timings).

use std::borrow::Cow;
use std::marker::PhantomData;
use std::ops::Deref;
use std::time::Instant;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::StreamScan;
use crate::record::{FailureKind, RequestRecord, Usage};

/// A struct read from a JSON object only. serde's derived structs also accept an array (fields by
/// position), which would misread `"usage": [5, 3]` as 5 prompt tokens; this wrapper rejects it, so such an
/// event takes the generic path, where a non-object is ignored.
struct Obj<T>(T);

impl<T> Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapOnly<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for MapOnly<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(MapOnly(PhantomData)).map(Obj)
    }
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    choices: Option<Choices<'a>>,
    #[serde(default)]
    usage: Option<Obj<UsageJson>>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
}

/// A `choices` array reduced to what is read of it: its first element (the rest are checked as JSON
/// and skipped, without allocating a vector per event).
struct Choices<'a> {
    first: Option<Obj<Choice<'a>>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Choices<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Obj<Choice<'a>>>()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Choices { first })
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Obj<Delta<'a>>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Obj<Delta<'a>>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Obj<ToolCall<'a>>>>,
    #[serde(borrow, default)]
    reasoning_details: Option<Vec<Obj<ReasoningDetail<'a>>>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow, default)]
    function: Option<Obj<Function<'a>>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ReasoningDetail<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    summary: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Obj<Details>>,
    #[serde(default)]
    completion_tokens_details: Option<Obj<CompletionDetails>>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

fn non_empty(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

impl Delta<'_> {
    /// evalscope's `_parse_chat_delta`: text, reasoning, tool-call text or reasoning details.
    fn has_output(&self) -> bool {
        non_empty(&self.content)
            || non_empty(&self.reasoning_content)
            || non_empty(&self.reasoning)
            || self.tool_calls.iter().flatten().any(|t| {
                t.function
                    .as_ref()
                    .is_some_and(|f| non_empty(&f.name) || non_empty(&f.arguments))
            })
            || self
                .reasoning_details
                .iter()
                .flatten()
                .any(|d| non_empty(&d.text) || non_empty(&d.summary))
    }
}

pub use super::event_scan::EventInfo;

fn usage_of(u: UsageJson) -> Usage {
    Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        cached_tokens: u.prompt_tokens_details.and_then(|d| d.0.cached_tokens),
        reasoning_tokens: u
            .completion_tokens_details
            .and_then(|d| d.0.reasoning_tokens),
    }
}

/// Classifies one event payload.
pub fn inspect(payload: &[u8]) -> EventInfo {
    super::event_scan::inspect(payload).unwrap_or_else(|| inspect_serde(payload))
}

/// The `serde_json` path: the typed fields, or a generic walk when their types are unexpected.
pub(super) fn inspect_serde(payload: &[u8]) -> EventInfo {
    match serde_json::from_slice::<Obj<Event<'_>>>(payload).map(|e| e.0) {
        Ok(ev) => {
            let is_error = ev.error.is_some() || ev.object.as_deref() == Some("error");
            let first = ev.choices.and_then(|c| c.first);
            let has_choices = first.is_some();
            let has_output = first.as_ref().is_some_and(|c| {
                non_empty(&c.text)
                    || c.delta.as_ref().is_some_and(|d| d.has_output())
                    || c.message.as_ref().is_some_and(|d| d.has_output())
            });
            EventInfo {
                is_json: true,
                is_error,
                has_choices,
                has_output,
                usage: ev.usage.map(|u| usage_of(u.0)),
                malformed: false,
            }
        }
        Err(_) => match serde_json::from_slice::<Value>(payload) {
            Ok(v) => inspect_value(&v),
            Err(_) => EventInfo {
                malformed: looks_broken(payload),
                ..EventInfo::default()
            },
        },
    }
}

/// A payload that failed to parse but was meant to be JSON: it starts with `{` or is not UTF-8.
fn looks_broken(payload: &[u8]) -> bool {
    payload.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        || std::str::from_utf8(payload).is_err()
}

/// Why `payload` (which failed to parse) is malformed, with its start, one line.
pub fn describe_malformed(what: &str, payload: &[u8]) -> String {
    const SHOWN: usize = 200;
    let why = match std::str::from_utf8(payload) {
        Err(e) => format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        Ok(_) => match serde_json::from_slice::<serde::de::IgnoredAny>(payload) {
            Err(e) => format!("not valid JSON: {e}"),
            Ok(_) => "not a JSON object".to_string(),
        },
    };
    let shown = crate::record::one_line(&String::from_utf8_lossy(
        &payload[..payload.len().min(SHOWN)],
    ));
    let more = if payload.len() > SHOWN {
        format!("… ({} bytes in all)", payload.len())
    } else {
        String::new()
    };
    format!("malformed {what} ({why}): {shown}{more}")
}

fn str_non_empty(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

fn value_has_output(d: &Value) -> bool {
    str_non_empty(d.get("content"))
        || str_non_empty(d.get("reasoning_content"))
        || str_non_empty(d.get("reasoning"))
        || d.get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| {
                calls.iter().any(|c| {
                    let f = c.get("function");
                    str_non_empty(f.and_then(|f| f.get("name")))
                        || str_non_empty(f.and_then(|f| f.get("arguments")))
                })
            })
        || d.get("reasoning_details")
            .and_then(Value::as_array)
            .is_some_and(|ds| {
                ds.iter()
                    .any(|x| str_non_empty(x.get("text")) || str_non_empty(x.get("summary")))
            })
}

/// The generic path for events whose fields have unexpected types: classifies an already-parsed event.
/// [`inspect`] agrees with it on every JSON payload (checked by the fuzz tests).
pub fn inspect_value(v: &Value) -> EventInfo {
    let Some(obj) = v.as_object() else {
        return EventInfo {
            is_json: true,
            ..EventInfo::default()
        };
    };
    let is_error = obj.get("error").is_some_and(|e| !e.is_null())
        || obj.get("object").and_then(Value::as_str) == Some("error");
    let choices = obj.get("choices").and_then(Value::as_array);
    let first = choices.and_then(|c| c.first());
    let has_output = first.is_some_and(|c| {
        str_non_empty(c.get("text"))
            || c.get("delta").is_some_and(value_has_output)
            || c.get("message").is_some_and(value_has_output)
    });
    let usage = obj.get("usage").filter(|u| u.is_object()).map(|u| Usage {
        prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
        completion_tokens: u.get("completion_tokens").and_then(Value::as_u64),
        cached_tokens: u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64),
        reasoning_tokens: u
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64),
    });
    EventInfo {
        is_json: true,
        is_error,
        has_choices: choices.is_some_and(|c| !c.is_empty()),
        has_output,
        usage,
        malformed: false,
    }
}

fn merge_usage(record: &mut RequestRecord, u: Usage) {
    if u.prompt_tokens.is_some() || u.completion_tokens.is_some() {
        record.usage.prompt_tokens = u.prompt_tokens.or(Some(0));
        record.usage.completion_tokens = u.completion_tokens.or(Some(0));
    }
    if u.cached_tokens.is_some() {
        record.usage.cached_tokens = u.cached_tokens;
    }
    if u.reasoning_tokens.is_some() {
        record.usage.reasoning_tokens = u.reasoning_tokens;
    }
}

/// Applies one SSE event that arrived at `at` to `record` (evalscope's `StreamedResponseHandler` rules).
pub fn apply_stream_event(record: &mut RequestRecord, payload: &[u8], at: Instant) {
    apply_stream_event_scanned(record, payload, at, &mut StreamScan::default());
}

/// [`apply_stream_event`] with the stream's [`StreamScan`], which reads each event from where it stops
/// repeating the last kept one.
pub fn apply_stream_event_scanned(
    record: &mut RequestRecord,
    payload: &[u8],
    at: Instant,
    scan: &mut StreamScan,
) {
    if payload == b"[DONE]" {
        // The end marker: not JSON and not malformed (`inspect_serde` says so, at a thousand times the
        // cost; the tests check it), so nothing to apply.
        return;
    }
    let last_kept = record
        .response_spans
        .last()
        .map(|&(a, b)| &record.response_bytes[a as usize..b as usize]);
    let info = scan
        .inspect(payload, last_kept)
        .unwrap_or_else(|| inspect_serde(payload));
    if !info.is_json {
        if info.malformed && record.error.is_none() {
            record.failure = Some(FailureKind::Malformed);
            record.error = Some(describe_malformed("stream event", payload));
        }
        return;
    }
    if info.is_error && record.error.is_none() {
        record.failure = Some(FailureKind::InBandError);
        record.error = Some(crate::record::one_line(&String::from_utf8_lossy(payload)));
    }
    if info.has_choices {
        if info.has_output {
            record.chunk_times.push(at);
        }
        if !record.chunk_times.is_empty() {
            record.n_decode_chunks += 1;
        }
        record.keep_response(payload);
        scan.kept();
    }
    if let Some(u) = info.usage {
        merge_usage(record, u);
    }
    record.completed_at = at;
}

/// Applies a whole non-stream JSON body to `record`; returns `false` when it was not JSON.
pub fn apply_body(record: &mut RequestRecord, body: &[u8]) -> bool {
    let info = inspect(body);
    if !info.is_json {
        return false;
    }
    if info.is_error {
        record.failure = Some(FailureKind::InBandError);
        record.error = Some(crate::record::one_line(&String::from_utf8_lossy(body)));
    }
    record.keep_response(body);
    if let Some(u) = info.usage {
        merge_usage(record, u);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn rec() -> RequestRecord {
        RequestRecord::new(0, false, Arc::from("{}"), Instant::now())
    }

    #[test]
    fn the_end_marker_changes_nothing() {
        assert_eq!(inspect_serde(b"[DONE]"), EventInfo::default());
        let mut r = rec();
        let before = format!("{r:?}");
        apply_stream_event(&mut r, b"[DONE]", Instant::now() + Duration::from_secs(1));
        assert_eq!(format!("{r:?}"), before);
    }

    #[test]
    fn role_only_and_usage_chunks_are_not_output() {
        let role = br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#;
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3}}}"#;
        let i = inspect(role);
        assert!(i.has_choices && !i.has_output);
        let u = inspect(usage);
        assert!(!u.has_choices);
        assert_eq!(
            u.usage,
            Some(Usage {
                prompt_tokens: Some(7),
                completion_tokens: Some(5),
                cached_tokens: Some(3),
                reasoning_tokens: None,
            })
        );
        assert!(!inspect(b"[DONE]").is_json);
    }

    #[test]
    fn every_output_field_counts() {
        for p in [
            &br#"{"choices":[{"delta":{"content":"hi"}}]}"#[..],
            br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            br#"{"choices":[{"delta":{"reasoning":"think"}}]}"#,
            br#"{"choices":[{"delta":{"content":null,"tool_calls":[{"function":{"arguments":"{\""}}]}}]}"#,
            br#"{"choices":[{"delta":{"reasoning_details":[{"summary":"s"}]}}]}"#,
            br#"{"object":"text_completion","choices":[{"text":" a"}]}"#,
        ] {
            assert!(inspect(p).has_output, "{}", String::from_utf8_lossy(p));
        }
        assert!(!inspect(br#"{"choices":[{"delta":{"content":""}}]}"#).has_output);
    }

    #[test]
    fn odd_types_fall_back_to_the_generic_walk() {
        let p = br#"{"choices":[{"delta":{"content":"x","tool_calls":"weird"}}],"usage":null}"#;
        let i = inspect(p);
        assert!(i.is_json && i.has_output && i.usage.is_none());
    }

    #[test]
    fn stream_events_fill_the_record() {
        let mut r = rec();
        let t0 = r.sent_at;
        let at = |ms| t0 + Duration::from_millis(ms);
        apply_stream_event(
            &mut r,
            br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            at(40),
        );
        apply_stream_event(
            &mut r,
            br#"{"choices":[{"delta":{"content":"a"}}]}"#,
            at(50),
        );
        apply_stream_event(&mut r, br#"{"choices":[{"delta":{}}]}"#, at(55));
        apply_stream_event(
            &mut r,
            br#"{"choices":[{"delta":{"content":"b"}}]}"#,
            at(60),
        );
        apply_stream_event(
            &mut r,
            br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
            at(61),
        );
        apply_stream_event(&mut r, b"[DONE]", at(70));
        assert_eq!(r.chunk_times, vec![at(50), at(60)]);
        assert_eq!(r.n_decode_chunks, 3);
        assert_eq!(
            r.responses().count(),
            4,
            "choices chunks only, usage-only chunk not kept"
        );
        assert_eq!(
            r.completed_at,
            at(61),
            "latency ends at the last JSON event"
        );
        assert_eq!(r.usage.completion_tokens, Some(2));
        assert!(r.error.is_none());
    }

    #[test]
    fn in_band_error_marks_failure() {
        let mut r = rec();
        apply_stream_event(&mut r, br#"{"error":{"message":"boom"}}"#, Instant::now());
        assert_eq!(r.failure, Some(FailureKind::InBandError));
        assert!(r.error.as_deref().unwrap().contains("boom"));
        let mut r = rec();
        apply_stream_event(
            &mut r,
            br#"{"object":"error","message":"x"}"#,
            Instant::now(),
        );
        assert_eq!(r.failure, Some(FailureKind::InBandError));
    }

    #[test]
    fn broken_json_fails_but_done_and_keepalive_text_are_skipped() {
        let mut r = rec();
        apply_stream_event(&mut r, b"[DONE]", Instant::now());
        apply_stream_event(&mut r, b"ping", Instant::now());
        assert!(r.failure.is_none());
        apply_stream_event(&mut r, br#"{"choices":[{"ind"#, Instant::now());
        assert_eq!(r.failure, Some(FailureKind::Malformed));
        assert!(r.error.as_deref().unwrap().contains("not valid JSON"));
        let mut r = rec();
        apply_stream_event(
            &mut r,
            b"{\"choices\":[{\"delta\":{\"content\":\"a\xff\"}}]}",
            Instant::now(),
        );
        assert_eq!(r.failure, Some(FailureKind::Malformed));
        assert!(r
            .error
            .as_deref()
            .unwrap()
            .contains("invalid UTF-8 at byte 34"));
        assert!(r.chunk_times.is_empty(), "a broken chunk is not output");
    }

    #[test]
    fn non_stream_body() {
        let mut r = rec();
        assert!(apply_body(&mut r, br#"{"choices":[{"message":{"content":"hey"}}],"usage":{"prompt_tokens":4,"completion_tokens":1}}"#));
        assert_eq!(r.usage.prompt_tokens, Some(4));
        assert_eq!(r.responses().count(), 1);
        assert!(!apply_body(&mut rec(), b"not json"));
    }
}
