//! The assistant's reply text of a finished request (evalscope's `generated_text`), appended to a
//! conversation's history before its next turn: for a stream, the `content` (plus `reasoning_content`, or
//! `reasoning`) of `choices[0].delta` of every kept chunk, or `choices[0].text` from the completions API;
//! for a whole body, `choices[0].message.content` plus its `reasoning_content`.

use serde_json::Value;

use crate::record::RequestRecord;

fn str_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The reply text of `r` (empty when it carried none).
pub fn generated_text(r: &RequestRecord) -> String {
    let mut text = String::new();
    for payload in r.responses() {
        let Ok(v) = serde_json::from_slice::<Value>(payload) else {
            continue;
        };
        let Some(choice) = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            continue;
        };
        if let Some(t) = choice.get("text").and_then(Value::as_str) {
            text.push_str(t);
            continue;
        }
        if let Some(delta) = choice.get("delta") {
            text.push_str(str_of(Some(delta), "content"));
            let reasoning = str_of(Some(delta), "reasoning_content");
            if reasoning.is_empty() {
                text.push_str(str_of(Some(delta), "reasoning"));
            } else {
                text.push_str(reasoning);
            }
        } else if let Some(message) = choice.get("message") {
            if message.get("content").is_some_and(|c| !c.is_null()) {
                text.push_str(str_of(Some(message), "content"));
                text.push_str(str_of(Some(message), "reasoning_content"));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn record(payloads: &[&str]) -> RequestRecord {
        let mut r = RequestRecord::new(0, false, "{}".into(), Instant::now());
        for p in payloads {
            r.keep_response(p.as_bytes());
        }
        r
    }

    #[test]
    fn stream_deltas_and_reasoning_are_joined() {
        let r = record(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":" world","reasoning":"ignored? no"}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3}}"#,
        ]);
        assert_eq!(generated_text(&r), "think Hello worldignored? no");
    }

    #[test]
    fn whole_body_and_completions_text() {
        let r = record(&[
            r#"{"choices":[{"message":{"role":"assistant","content":"Hi","reasoning_content":"!"}}]}"#,
        ]);
        assert_eq!(generated_text(&r), "Hi!");
        let r = record(&[
            r#"{"choices":[{"text":"a"}]}"#,
            r#"{"choices":[{"text":"b"}]}"#,
        ]);
        assert_eq!(generated_text(&r), "ab");
    }
}
