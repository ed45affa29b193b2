//! Strategies for JSON values, and an independent reference for Python's `json.dumps(ensure_ascii=False)`.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Keys that the OpenAI event parser and the body composer look at, plus random ones.
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "choices", "delta", "content", "text", "message", "usage", "prompt_tokens",
            "completion_tokens", "prompt_tokens_details", "cached_tokens", "error", "object",
            "reasoning_content", "reasoning", "tool_calls", "function", "name", "arguments",
            "reasoning_details", "summary", "role", "model", "max_tokens", "stream",
            "stream_options", "messages", "prompt", "temperature",
        ])
        .prop_map(str::to_string),
        1 => any::<String>(),
    ]
}

/// Finite floats across magnitudes (Python's repr switches to exponents at 1e16 and 1e-4).
pub fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1e6..1e6f64),
        prop::sample::select(vec![
            0.0,
            -0.0,
            0.1,
            1e16,
            1e-5,
            1e-4,
            123456789012345680.0,
            5e-324
        ]),
    ]
}

/// A leaf value.
pub fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        float().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        "[ -~]{0,12}".prop_map(Value::String),
        Just(Value::String(String::new())),
    ]
}

/// Any JSON value, nested up to 4 levels.
pub fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A JSON object.
pub fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((key(), value()), 0..6).prop_map(|kv| kv.into_iter().collect())
}

/// Python's `json.dumps(v, ensure_ascii=False)`, written independently of `llmperf::pyjson` (floats
/// excepted: their repr is `pyjson::float_repr`, checked against Python in its own tests).
pub fn py_dumps(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            _ => llmperf::pyjson::float_repr(n.as_f64().unwrap()),
        },
        Value::String(s) => py_str(s),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(py_dumps).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_dumps(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// CPython's `py_encode_basestring`: `"` `\` and control characters escaped, everything else raw.
fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
