//! A response's tool calls and text, put back together from the payloads the record keeps: the stream's
//! `delta.tool_calls` fragments (index, id, name, arguments) joined per call in arrival order, or a
//! non-stream body's `message.tool_calls`; the `content` text; the last `finish_reason`; and when the first
//! chunk carrying a tool call arrived.
//!
//! Fragments follow OpenAI's streaming rules as vLLM, SGLang and llama.cpp send them: a call is keyed by
//! its `index`; its `id` and `name` come once (a later, different name fragment is appended; a repeated
//! one is not); its `arguments` arrive in pieces that are concatenated. An entry without `index` starts a
//! new call when it brings a new `id`, else continues the last one. Only the first choice is read.

use serde_json::Value;

use crate::api::openai_event::inspect;
use crate::record::RequestRecord;

/// One reassembled call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    /// Its `index` (its position for non-stream bodies).
    pub index: u64,
    /// Its `id` (empty when the server sent none).
    pub id: String,
    /// `function.name`.
    pub name: String,
    /// `function.arguments`, concatenated.
    pub arguments: String,
}

/// What one response carried.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The tool calls, in the order their first fragment arrived.
    pub calls: Vec<Call>,
    /// The `content` text.
    pub content: String,
    /// The last `finish_reason` sent.
    pub finish_reason: Option<String>,
    /// Seconds from sending to the first chunk that carried a call's name or arguments (non-stream: the
    /// latency).
    pub first_call_s: Option<f64>,
}

/// A JSON string's text, or another value's JSON text (a server that sends `arguments` as an object).
fn text_of(v: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.as_str().into()),
        other => Some(other.to_string().into()),
    }
}

impl Reply {
    /// Adds one delta's (or message's) `tool_calls` list; `true` when it carried a name or arguments.
    fn add_calls(&mut self, list: &[Value]) -> bool {
        let mut carried = false;
        for entry in list {
            let function = entry.get("function");
            let id = entry.get("id").and_then(Value::as_str).unwrap_or("");
            let index = match entry.get("index").and_then(Value::as_u64) {
                Some(i) => i,
                None => match self.calls.last() {
                    Some(last) if id.is_empty() || id == last.id => last.index,
                    Some(_) => self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0),
                    None => 0,
                },
            };
            let pos = match self.calls.iter().position(|c| c.index == index) {
                Some(p) => p,
                None => {
                    self.calls.push(Call {
                        index,
                        ..Call::default()
                    });
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[pos];
            if call.id.is_empty() && !id.is_empty() {
                call.id = id.to_string();
            }
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(text_of) {
                if !name.is_empty() {
                    carried = true;
                    if call.name.is_empty() {
                        call.name = name.into_owned();
                    } else if call.name != name {
                        call.name.push_str(&name);
                    }
                }
            }
            if let Some(args) = function.and_then(|f| f.get("arguments")).and_then(text_of) {
                carried |= !args.is_empty();
                call.arguments.push_str(&args);
            }
        }
        carried
    }

    /// Adds one choice's delta or message, seen `at_s` after sending.
    fn add_choice(&mut self, choice: &Value, at_s: Option<f64>) {
        let part = choice.get("delta").or_else(|| choice.get("message"));
        if let Some(part) = part {
            if let Some(text) = part.get("content").and_then(Value::as_str) {
                self.content.push_str(text);
            }
            if let Some(list) = part.get("tool_calls").and_then(Value::as_array) {
                if self.add_calls(list) && self.first_call_s.is_none() {
                    self.first_call_s = at_s;
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
    }
}

/// The first choice of an event (`index` 0, else the first element).
fn first_choice(event: &Value) -> Option<&Value> {
    let choices = event.get("choices")?.as_array()?;
    choices
        .iter()
        .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| choices.first())
}

/// Reassembles the kept payloads of `record`. Output-bearing stream chunks are matched to the record's
/// chunk stamps in order, exactly as the client pushed them.
pub fn read(record: &RequestRecord) -> Reply {
    let mut reply = Reply::default();
    let mut stamp = 0usize;
    for payload in record.responses() {
        let at_s = if record.is_stream {
            if !inspect(payload).has_output {
                None
            } else {
                let at = record.chunk_times.get(stamp).copied();
                stamp += 1;
                at.map(|t| t.saturating_duration_since(record.sent_at).as_secs_f64())
            }
        } else {
            Some(record.latency_s())
        };
        let Ok(event) = serde_json::from_slice::<Value>(payload) else {
            continue;
        };
        if let Some(choice) = first_choice(&event) {
            reply.add_choice(choice, at_s);
        }
    }
    reply
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::api::openai_event::{apply_body, apply_stream_event};

    fn streamed(events: &[(u64, &str)]) -> RequestRecord {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        let t0 = r.sent_at;
        for (ms, e) in events {
            apply_stream_event(&mut r, e.as_bytes(), t0 + Duration::from_millis(*ms));
        }
        r.is_stream = true;
        r.success = true;
        r
    }

    #[test]
    fn vllm_style_fragments_reassemble_per_index() {
        let r = streamed(&[
            (
                10,
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            ),
            (
                20,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
            ),
            (
                30,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}"#,
            ),
            (
                40,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"get_time","arguments":"{}"}}]}}]}"#,
            ),
            (
                50,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}"#,
            ),
            (
                60,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            ),
        ]);
        let reply = read(&r);
        assert_eq!(
            reply.calls,
            vec![
                Call {
                    index: 0,
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city": "Paris"}"#.into()
                },
                Call {
                    index: 1,
                    id: "call_2".into(),
                    name: "get_time".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert!((reply.first_call_s.unwrap() - 0.020).abs() < 1e-9);
        assert_eq!(reply.content, "");
    }

    #[test]
    fn entries_without_index_and_repeated_names() {
        let r = streamed(&[
            (5, r#"{"choices":[{"delta":{"content":"Let me check. "}}]}"#),
            (
                9,
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}"#,
            ),
            (
                12,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":": 1}"}}]}}]}"#,
            ),
            (
                15,
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            ),
        ]);
        let reply = read(&r);
        let got: Vec<(&str, &str, &str)> = reply
            .calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(got, [("a", "f", r#"{"x": 1}"#), ("b", "g", "{}")]);
        assert_eq!(reply.content, "Let me check. ");
        // The first chunk with output was the content, the first with a call the second stamp.
        assert!((reply.first_call_s.unwrap() - 0.009).abs() < 1e-9);
    }

    #[test]
    fn non_stream_message() {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        r.completed_at = r.sent_at + Duration::from_millis(70);
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":[1]}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}"#;
        assert!(apply_body(&mut r, body.as_bytes()));
        r.success = true;
        let reply = read(&r);
        assert_eq!(reply.calls.len(), 1);
        assert_eq!(reply.calls[0].arguments, r#"{"a":[1]}"#);
        assert_eq!(reply.first_call_s, Some(0.07));
        let json = r#"{"choices":[{"message":{"content":"{\"n\": 2}"},"finish_reason":"length"}]}"#;
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        apply_body(&mut r, json.as_bytes());
        let reply = read(&r);
        assert_eq!(
            (reply.content.as_str(), reply.finish_reason.as_deref()),
            (r#"{"n": 2}"#, Some("length"))
        );
        assert!(reply.calls.is_empty() && reply.first_call_s.is_none());
    }
}
