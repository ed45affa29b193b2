//! Parsing of the request bodies the simulator honours, and the two numbers it derives from them: the prompt
//! token count and the planned output length.
//!
//! Token counting needs no tokenizer: text counts one token per whitespace-separated word (see the
//! [module docs](super)), a list of integers counts one token per id. The count is computed while the JSON is
//! deserialized (a visitor), so no text is kept.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// `max_tokens` when the request gives neither `max_tokens` nor `max_completion_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 16;

/// The fields of a chat, completions or embeddings body that the simulator looks at; the rest is ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GenRequest {
    pub model: Option<String>,
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    /// The Responses API's `max_output_tokens`.
    pub max_output_tokens: Option<u64>,
    pub min_tokens: Option<u64>,
    pub ignore_eos: Option<bool>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub messages: Option<Vec<Message>>,
    pub prompt: Option<Count>,
    pub input: Option<Count>,
    /// A fault to inject into this request's response (see `fault.rs`).
    pub llmperf_fault: Option<String>,
    /// Rerank query.
    pub query: Option<Count>,
    /// Rerank documents.
    pub documents: Option<Count>,
    /// Offered functions (a tool call is answered; see `structured.rs`).
    pub tools: Option<serde_json::Value>,
    /// `tool_choice`.
    pub tool_choice: Option<serde_json::Value>,
    /// `response_format` (JSON output).
    pub response_format: Option<serde_json::Value>,
    /// The request's `seed` (any JSON: only read as the seed of the invalid-output draw).
    pub seed: Option<serde_json::Value>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StreamOptions {
    pub include_usage: Option<bool>,
}

/// One chat message; only its `content` matters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Message {
    pub content: Option<Count>,
}

impl GenRequest {
    /// Whether an SSE stream was asked for.
    pub fn is_stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// Whether a final usage chunk was asked for (`stream_options.include_usage`).
    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.include_usage) == Some(true)
    }

    /// Prompt tokens of a chat request: words over every message's text content.
    pub fn chat_prompt_tokens(&self) -> u64 {
        self.messages
            .iter()
            .flatten()
            .filter_map(|m| m.content.as_ref())
            .map(|c| c.tokens)
            .sum()
    }

    /// The output cap: `max_tokens` (or `max_completion_tokens`, `max_output_tokens`), default 16.
    pub fn max_output(&self) -> u32 {
        self.max_tokens
            .or(self.max_completion_tokens)
            .or(self.max_output_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS)
            .min(u64::from(u32::MAX)) as u32
    }

    /// The planned output: how many tokens and the `finish_reason` to report.
    ///
    /// `ignore_eos: true` gives exactly `max_tokens`; otherwise the natural length `natural` is raised to
    /// `min_tokens` and then capped at `max_tokens`. The reason is `"length"` when the output reaches
    /// `max_tokens`, else `"stop"`.
    pub fn output_plan(&self, natural: u32) -> (u32, &'static str) {
        let max = self.max_output();
        let n = if self.ignore_eos == Some(true) {
            max
        } else {
            let min = self.min_tokens.unwrap_or(0).min(u64::from(u32::MAX)) as u32;
            natural.max(min).min(max)
        };
        (n, if n == max { "length" } else { "stop" })
    }
}

/// Number of prompt tokens in a piece of text: its whitespace-separated words.
pub(crate) fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// A token count read straight from JSON: a string counts its words, an integer counts 1 (a token id), a list
/// sums its items, a content part `{"type":"text","text":…}` (or the Responses API's `input_text`) counts its
/// text (other parts count 0), a message `{"role":…,"content":…}` counts its content, `null` counts 0.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    /// Tokens counted.
    pub tokens: u64,
    /// Number of inputs: 1 for a string or a flat list of token ids, the length of a list of strings or of
    /// lists (an embeddings batch).
    pub items: u64,
    /// The value was a bare integer (a token id).
    is_id: bool,
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CountVisitor)
    }
}

struct CountVisitor;

impl<'de> Visitor<'de> for CountVisitor {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("text, a token id, a content part or a list of them")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Count, E> {
        Ok(Count {
            tokens: count_words(v),
            items: 1,
            is_id: false,
        })
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Count, E> {
        Ok(Count {
            tokens: 1,
            items: 1,
            is_id: true,
        })
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Count, E> {
        self.visit_u64(0)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_none<E: de::Error>(self) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let (mut tokens, mut len, mut all_ids) = (0u64, 0u64, true);
        while let Some(item) = seq.next_element::<Count>()? {
            tokens += item.tokens;
            len += 1;
            all_ids &= item.is_id;
        }
        let items = if all_ids && len > 0 { 1 } else { len };
        Ok(Count {
            tokens,
            items,
            is_id: false,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
        let (mut is_text, mut tokens, mut content) = (false, 0u64, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "type" => {
                    let kind = map.next_value::<std::borrow::Cow<'de, str>>()?;
                    is_text = kind == "text" || kind == "input_text";
                }
                "text" => tokens = map.next_value::<Count>()?.tokens,
                "content" => content = Some(map.next_value::<Count>()?.tokens),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let tokens = match content {
            Some(c) => c,
            None if is_text => tokens,
            None => 0,
        };
        Ok(Count {
            tokens,
            items: 1,
            is_id: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> GenRequest {
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn chat_prompt_counts_words_of_text_content() {
        let r = parse(
            r#"{"messages":[{"role":"system","content":"be  brief\n now"},
                {"role":"user","content":[{"type":"text","text":"two words"},
                  {"type":"image_url","image_url":{"url":"data:x"}}]},
                {"role":"assistant","content":null}]}"#,
        );
        assert_eq!(r.chat_prompt_tokens(), 5);
    }

    #[test]
    fn prompt_and_input_forms() {
        let c = |s: &str| serde_json::from_str::<Count>(s).unwrap();
        assert_eq!((c(r#""a b  c""#).tokens, c(r#""a b  c""#).items), (3, 1));
        assert_eq!(
            (c("[20, 94, 33, 73]").tokens, c("[20, 94, 33, 73]").items),
            (4, 1)
        );
        assert_eq!(
            (c(r#"["a b", "c"]"#).tokens, c(r#"["a b", "c"]"#).items),
            (3, 2)
        );
        assert_eq!((c("[[1,2],[3]]").tokens, c("[[1,2],[3]]").items), (3, 2));
        assert!(serde_json::from_str::<Count>("1.5").is_err());
        // The Responses API's input: messages whose content is text or `input_text` parts.
        let input = r#"[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"input_text","text":"a b c"},{"type":"input_image","image_url":"x"}]}]"#;
        assert_eq!(c(input).tokens, 5);
    }

    #[test]
    fn output_plan_clamps_and_honours_ignore_eos() {
        assert_eq!(parse("{}").output_plan(64), (16, "length"));
        assert_eq!(parse(r#"{"max_tokens":100}"#).output_plan(64), (64, "stop"));
        assert_eq!(
            parse(r#"{"max_tokens":10}"#).output_plan(64),
            (10, "length")
        );
        let r = parse(r#"{"max_tokens":100,"min_tokens":80}"#);
        assert_eq!(r.output_plan(64), (80, "stop"));
        let r = parse(r#"{"max_tokens":100,"min_tokens":200}"#);
        assert_eq!(r.output_plan(64), (100, "length"));
        let r = parse(r#"{"max_tokens":5,"ignore_eos":true}"#);
        assert_eq!(r.output_plan(2), (5, "length"));
        let r = parse(r#"{"max_completion_tokens":7}"#);
        assert_eq!(r.output_plan(64), (7, "length"));
    }

    #[test]
    fn stream_flags() {
        let r = parse(r#"{"stream":true,"stream_options":{"include_usage":true}}"#);
        assert!(r.is_stream() && r.include_usage());
        let r = parse(r#"{"stream":true,"stream_options":null}"#);
        assert!(r.is_stream() && !r.include_usage());
    }
}
