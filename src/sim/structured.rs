//! Tool calls and JSON outputs: what the simulator answers a chat request that offers tools or asks for
//! JSON, and how it streams it (in fragments, as vLLM and llama.cpp do).
//!
//! * **Tool call**: a request with a non-empty `tools` list and a `tool_choice` other than `"none"` gets
//!   one call of the function `tool_choice` names, else of the first tool. Its arguments are an instance
//!   of the function's `parameters` schema ([`super::instance`]). The first token is the call's
//!   header (`id`, `type`, `name`, empty `arguments`); each further token is a fragment of the arguments
//!   of up to [`PIECE_BYTES`] bytes. `finish_reason` is `"tool_calls"`.
//! * **JSON output**: a `response_format` of type `json_schema` (an instance of its schema) or
//!   `json_object` (`{"answer": "hello"}`) gets that JSON as `content`, one fragment per token, and
//!   `finish_reason` `"stop"`.
//!
//! The output length is the fragments' count, not `--mock-output-tokens`, `min_tokens` or `ignore_eos`;
//! `max_tokens` still cuts it (the arguments or text end mid-way, `finish_reason` `"length"`).
//!
//! With an invalid-output rate R, a request's output is made invalid with probability R: arguments that
//! still parse but do not validate (a required property left out, else a property of the wrong type, else
//! not an object), or JSON text cut short. The draw is seeded by the request's own `seed` (0 without one)
//! and the simulator's request number, so a fresh simulator given the same requests in the same order
//! invalidates the same ones.

use std::sync::Arc;

use serde_json::Value;

use super::instance;
use super::request::GenRequest;
use super::truth::{TruthCall, TruthStructured};

/// Most bytes of text in one token's fragment (fragments end on character boundaries).
pub(crate) const PIECE_BYTES: usize = 4;

/// What the output is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One tool call.
    ToolCall {
        /// Its `id`.
        id: String,
        /// The function's name.
        name: String,
    },
    /// JSON as the message `content`.
    Json,
}

/// The planned output of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Structured {
    pub kind: Kind,
    /// The arguments (tool call) or the content (JSON), whole.
    pub text: String,
    /// End offsets of the fragments in `text`.
    ends: Vec<usize>,
    /// The output was made invalid on purpose.
    pub invalid: bool,
}

impl Structured {
    fn new(kind: Kind, text: String, invalid: bool) -> Structured {
        let mut ends = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let mut end = (at + PIECE_BYTES).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            ends.push(end);
            at = end;
        }
        Structured {
            kind,
            text,
            ends,
            invalid,
        }
    }

    /// Tokens of the whole output: the call's header (tool calls) plus one per fragment.
    pub fn tokens(&self) -> u32 {
        let header = u32::from(matches!(self.kind, Kind::ToolCall { .. }));
        header + self.ends.len() as u32
    }

    /// The `finish_reason` of the whole output.
    pub fn finish_reason(&self) -> &'static str {
        match self.kind {
            Kind::ToolCall { .. } => "tool_calls",
            Kind::Json => "stop",
        }
    }

    /// The text carried by tokens `[start, end)`.
    pub fn text_of(&self, start: u32, end: u32) -> &str {
        let first = usize::from(matches!(self.kind, Kind::ToolCall { .. }));
        let piece = |t: u32| (t as usize).saturating_sub(first);
        let end_of = |p: usize| if p == 0 { 0 } else { self.ends[p - 1] };
        let (a, b) = (
            piece(start).min(self.ends.len()),
            piece(end).min(self.ends.len()),
        );
        &self.text[end_of(a)..end_of(b)]
    }
}

impl Structured {
    /// What was sent of it after `sent` tokens (the first at `first_s`), for the ground truth.
    pub fn truth(&self, sent: u32, first_s: Option<f64>) -> TruthStructured {
        let text = self.text_of(0, sent).to_string();
        match &self.kind {
            Kind::ToolCall { id, name } => TruthStructured {
                tool_call: (sent > 0).then(|| TruthCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: text,
                }),
                content: None,
                invalid: self.invalid,
                first_tool_call_s: first_s.filter(|_| sent > 0),
            },
            Kind::Json => TruthStructured {
                tool_call: None,
                content: Some(text),
                invalid: self.invalid,
                first_tool_call_s: None,
            },
        }
    }

    /// Appends the delta object of tokens `[start, end)` (the call's header with token 0), `extra`
    /// bytes (a text fault) at the end of its string.
    pub fn write_delta(&self, w: &mut bytes::BytesMut, start: u32, end: u32, extra: &[u8]) {
        use std::fmt::Write as _;
        let text = json_text(self.text_of(start, end));
        match &self.kind {
            Kind::ToolCall { id, name } => {
                w.extend_from_slice(br#"{"index":0,"delta":{"tool_calls":[{"index":0,"#);
                if start == 0 {
                    let _ = write!(
                        w,
                        r#""id":{},"type":"function","function":{{"name":{},"arguments":"#,
                        json_text(id),
                        json_text(name)
                    );
                } else {
                    w.extend_from_slice(br#""function":{"arguments":"#);
                }
                push_string(w, &text, extra);
                w.extend_from_slice(b"}}]}");
            }
            Kind::Json => {
                w.extend_from_slice(br#"{"index":0,"delta":{"content":"#);
                push_string(w, &text, extra);
                w.extend_from_slice(b"}");
            }
        }
    }

    /// Appends the non-stream `message` object carrying the first `tokens` tokens.
    pub fn write_message(&self, out: &mut String, tokens: u32) {
        let text = json_text(self.text_of(0, tokens));
        match &self.kind {
            Kind::ToolCall { id, name } => {
                out.push_str(r#"{"role":"assistant","content":null,"tool_calls":[{"id":"#);
                out.push_str(&json_text(id));
                out.push_str(r#","type":"function","function":{"name":"#);
                out.push_str(&json_text(name));
                out.push_str(r#","arguments":"#);
                out.push_str(&text);
                out.push_str("}}]}");
            }
            Kind::Json => {
                out.push_str(r#"{"role":"assistant","content":"#);
                out.push_str(&text);
                out.push('}');
            }
        }
    }
}

/// `s` as a JSON string literal.
fn json_text(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A JSON string literal with `extra` bytes inserted before its closing quote.
fn push_string(w: &mut bytes::BytesMut, literal: &str, extra: &[u8]) {
    w.extend_from_slice(&literal.as_bytes()[..literal.len() - 1]);
    w.extend_from_slice(extra);
    w.extend_from_slice(b"\"");
}

/// A uniform draw in [0, 1) from the request's seed and number (splitmix64).
fn draw(seed: u64, id: u64) -> f64 {
    let mut z = seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// A tool's `function.name`.
fn function_name(tool: &Value) -> Option<&str> {
    tool.get("function")?.get("name")?.as_str()
}

/// The function to call: the one `tool_choice` names, else the first; `None` when tools are not offered.
fn chosen_tool(request: &GenRequest) -> Option<&Value> {
    let tools = request.tools.as_ref()?.as_array()?;
    let named = match &request.tool_choice {
        Some(Value::String(s)) if s == "none" => return None,
        Some(Value::Object(o)) => o
            .get("function")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str),
        _ => None,
    };
    match named {
        Some(n) => tools.iter().find(|t| function_name(t) == Some(n)),
        None => tools.first(),
    }
    .and_then(|t| t.get("function"))
}

/// The output of request number `id`, or `None` when it asks for neither tools nor JSON.
pub(crate) fn plan(request: &GenRequest, id: u64, invalid_rate: f64) -> Option<Arc<Structured>> {
    let seed = request.seed.as_ref().map_or(0, |s| {
        s.as_u64().unwrap_or_else(|| s.as_i64().unwrap_or(0) as u64)
    });
    let invalid = invalid_rate > 0.0 && draw(seed, id) < invalid_rate;
    if let Some(function) = chosen_tool(request) {
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("function")
            .to_string();
        let schema = function.get("parameters").cloned().unwrap_or(Value::Null);
        let args = if invalid {
            instance::invalid(&schema)
        } else {
            instance::valid(&schema)
        };
        let kind = Kind::ToolCall {
            id: format!("call_{id}_0"),
            name,
        };
        return Some(Arc::new(Structured::new(kind, args.to_string(), invalid)));
    }
    let format = request.response_format.as_ref()?;
    let text = match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = format
                .get("json_schema")
                .and_then(|j| j.get("schema"))
                .cloned()
                .unwrap_or(Value::Null);
            instance::valid(&schema).to_string()
        }
        Some("json_object") => r#"{"answer": "hello"}"#.to_string(),
        _ => return None,
    };
    let text = if invalid {
        // Cut short: no longer JSON.
        text[..text.len() / 2].to_string()
    } else {
        text
    };
    Some(Arc::new(Structured::new(Kind::Json, text, invalid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> GenRequest {
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn fragments_cover_the_text_on_char_boundaries() {
        let s = Structured::new(Kind::Json, r#"{"a": "héllo"}"#.into(), false);
        let n = s.tokens();
        let joined: String = (0..n).map(|t| s.text_of(t, t + 1)).collect();
        assert_eq!(joined, s.text);
        assert_eq!(s.text_of(0, n), s.text);
        let call = Structured::new(
            Kind::ToolCall {
                id: "c".into(),
                name: "f".into(),
            },
            "{}".into(),
            false,
        );
        assert_eq!(
            (call.tokens(), call.text_of(0, 1), call.text_of(1, 2)),
            (2, "", "{}")
        );
    }

    #[test]
    fn tool_choice_picks_the_function() {
        let tools = r#""tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}},{"type":"function","function":{"name":"b"}}]"#;
        let s = plan(&request(&format!("{{{tools}}}")), 1, 0.0).unwrap();
        assert!(matches!(&s.kind, Kind::ToolCall { name, .. } if name == "a"));
        assert_eq!(s.text, r#"{"x":1}"#);
        let b =
            format!(r#"{{{tools},"tool_choice":{{"type":"function","function":{{"name":"b"}}}}}}"#);
        assert!(
            matches!(&plan(&request(&b), 1, 0.0).unwrap().kind, Kind::ToolCall { name, .. } if name == "b")
        );
        let none = format!(r#"{{{tools},"tool_choice":"none"}}"#);
        assert!(plan(&request(&none), 1, 0.0).is_none());
        assert!(plan(&request(r#"{"messages":[]}"#), 1, 0.0).is_none());
    }

    #[test]
    fn the_invalid_share_follows_the_rate_and_the_seed() {
        let body = r#"{"seed":7,"response_format":{"type":"json_object"}}"#;
        let r = request(body);
        let invalid = (1..=10_000)
            .filter(|&id| plan(&r, id, 0.2).unwrap().invalid)
            .count();
        assert!((1800..=2200).contains(&invalid), "{invalid}");
        let again = (1..=10_000)
            .filter(|&id| plan(&r, id, 0.2).unwrap().invalid)
            .count();
        assert_eq!(invalid, again);
        let cut = (1..)
            .map(|id| plan(&r, id, 0.2).unwrap())
            .find(|s| s.invalid)
            .unwrap();
        assert!(serde_json::from_str::<Value>(&cut.text).is_err());
    }
}
