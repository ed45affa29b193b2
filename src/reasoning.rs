//! Reasoning-aware accounting: for a response that carried reasoning (`reasoning_content` / `reasoning` /
//! `reasoning_details`), when its first reasoning token and its first answer token arrived (TTFO, time to
//! first output: the first token of the answer proper) and how many of its output tokens were reasoning.
//!
//! Worked out once per finished request by the aggregator from the payloads the record keeps anyway (never
//! on the request path), and only when the bytes mention `reasoning` at all, so a plain model costs one
//! `memchr` scan. Output-bearing stream chunks are matched to the record's chunk stamps in order, exactly as
//! the client pushed them. Reasoning tokens come from `usage.completion_tokens_details.reasoning_tokens`
//! when the server sent it, else from the tokenizer over the reasoning text (else unknown); answer tokens
//! are the completion tokens minus those. evalscope's TTFT (first output of any kind) is unchanged.

use memchr::memmem;
use serde_json::Value;

use crate::api::openai_event::inspect;
use crate::record::RequestRecord;
use crate::tokenizer::Tokenizer;

/// One request's reasoning vs answer split.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReasoningSplit {
    /// Seconds from sending to the first reasoning token.
    pub first_reasoning_s: Option<f64>,
    /// Seconds from sending to the first answer token (TTFO); `None` when no answer came.
    pub first_answer_s: Option<f64>,
    /// Reasoning tokens (server usage, else the tokenizer).
    pub reasoning_tokens: Option<u64>,
    /// Completion tokens minus reasoning tokens.
    pub answer_tokens: Option<u64>,
}

/// What one delta / message carries.
fn parts(d: &Value) -> (Option<String>, bool) {
    let text = |k: &str| d.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut reasoning: Option<String> = None;
    for k in ["reasoning_content", "reasoning"] {
        if let Some(t) = text(k) {
            reasoning.get_or_insert_with(String::new).push_str(t);
        }
    }
    for detail in d
        .get("reasoning_details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for k in ["text", "summary"] {
            if let Some(t) = detail
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                reasoning.get_or_insert_with(String::new).push_str(t);
            }
        }
    }
    let answer = text("content").is_some()
        || d.get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
    (reasoning, answer)
}

/// The split for a finished successful record, `None` when it carried no reasoning.
pub fn split(record: &RequestRecord, tokenizer: Option<&Tokenizer>) -> Option<ReasoningSplit> {
    if !record.success || memmem::find(&record.response_bytes, b"reasoning").is_none() {
        return None;
    }
    let mut out = ReasoningSplit::default();
    let mut reasoning_text = String::new();
    let mut seen_reasoning = false;
    let mut chunk = 0usize;
    for payload in record.responses() {
        let at_s = if record.is_stream {
            if !inspect(payload).has_output {
                continue;
            }
            let at = record.chunk_times.get(chunk).copied();
            chunk += 1;
            at.map(|t| t.saturating_duration_since(record.sent_at).as_secs_f64())
        } else {
            Some(record.latency_s())
        };
        let Ok(v) = serde_json::from_slice::<Value>(payload) else {
            continue;
        };
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        let Some(d) = choice.get("delta").or_else(|| choice.get("message")) else {
            continue;
        };
        let (reasoning, answer) = parts(d);
        if let Some(t) = reasoning {
            seen_reasoning = true;
            reasoning_text.push_str(&t);
            if out.first_reasoning_s.is_none() {
                out.first_reasoning_s = at_s;
            }
        }
        if answer && out.first_answer_s.is_none() {
            out.first_answer_s = at_s;
        }
    }
    if !seen_reasoning {
        return None;
    }
    out.reasoning_tokens = record.usage.reasoning_tokens.or_else(|| {
        tokenizer
            .and_then(|t| t.count(&reasoning_text).ok())
            .map(|n| n as u64)
    });
    out.answer_tokens = match (record.usage.completion_tokens, out.reasoning_tokens) {
        (Some(c), Some(r)) => Some(c.saturating_sub(r)),
        _ => None,
    };
    Some(out)
}

/// The run's reasoning statistics, fed one record at a time.
#[derive(Debug, Clone, Default)]
pub struct ReasoningStats {
    first_reasoning_s: Vec<f64>,
    first_answer_s: Vec<f64>,
    reasoning_tokens: Vec<u64>,
    answer_tokens: Vec<u64>,
    requests: u64,
}

impl ReasoningStats {
    /// Counts one finished record.
    pub fn add(&mut self, record: &RequestRecord) {
        let Some(s) = &record.reasoning else { return };
        self.requests += 1;
        self.first_reasoning_s.extend(s.first_reasoning_s);
        self.first_answer_s.extend(s.first_answer_s);
        self.reasoning_tokens.extend(s.reasoning_tokens);
        self.answer_tokens.extend(s.answer_tokens);
    }

    /// The summary keys; empty when no response carried reasoning.
    pub fn summary_keys(&self) -> Vec<(String, Value)> {
        if self.requests == 0 {
            return Vec::new();
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let ms = |s: f64| Value::from(crate::pyjson::round(s * 1000.0, 2));
        let mut keys = vec![("Reasoning Requests".to_string(), Value::from(self.requests))];
        if !self.first_reasoning_s.is_empty() {
            keys.push((
                "Avg Time to First Reasoning Token (ms)".into(),
                ms(mean(&self.first_reasoning_s)),
            ));
        }
        if !self.first_answer_s.is_empty() {
            let mut sorted = self.first_answer_s.clone();
            sorted.sort_by(f64::total_cmp);
            keys.push(("Avg TTFO (ms)".into(), ms(mean(&sorted))));
            for (label, q) in [("P50", 0.5), ("P99", 0.99)] {
                keys.push((format!("{label} TTFO (ms)"), ms(nearest_rank(&sorted, q))));
            }
        }
        let avg = |v: &[u64]| {
            Value::from(crate::pyjson::round(
                v.iter().sum::<u64>() as f64 / v.len() as f64,
                4,
            ))
        };
        if !self.reasoning_tokens.is_empty() {
            keys.push(("Avg Reasoning Tokens".into(), avg(&self.reasoning_tokens)));
        }
        if !self.answer_tokens.is_empty() {
            keys.push(("Avg Answer Tokens".into(), avg(&self.answer_tokens)));
        }
        keys
    }
}

/// The nearest-rank quantile of sorted values (`ceil(q·n)`-th, 1-based).
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::api::openai_event::apply_stream_event;

    #[test]
    fn stream_split_uses_chunk_stamps_and_usage() {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        let t0 = r.sent_at;
        let at = |ms| t0 + Duration::from_millis(ms);
        for (ms, p) in [
            (10, &br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#[..]),
            (20, br#"{"choices":[{"delta":{"reasoning_content":"hmm "}}]}"#),
            (30, br#"{"choices":[{"delta":{"reasoning_content":"ok "}}]}"#),
            (45, br#"{"choices":[{"delta":{"content":"Yes"}}]}"#),
            (50, br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":2}}}"#),
        ] {
            apply_stream_event(&mut r, p, at(ms));
        }
        r.is_stream = true;
        r.success = true;
        let s = split(&r, None).unwrap();
        assert!((s.first_reasoning_s.unwrap() - 0.020).abs() < 1e-9);
        assert!((s.first_answer_s.unwrap() - 0.045).abs() < 1e-9);
        assert_eq!((s.reasoning_tokens, s.answer_tokens), (Some(2), Some(1)));
        let mut stats = ReasoningStats::default();
        r.reasoning = Some(s);
        stats.add(&r);
        let keys = stats.summary_keys();
        assert_eq!(keys[0], ("Reasoning Requests".to_string(), Value::from(1)));
        assert!(keys
            .iter()
            .any(|(k, v)| k == "Avg TTFO (ms)" && v.as_f64() == Some(45.0)));
    }

    #[test]
    fn without_reasoning_usage_the_tokenizer_counts_and_non_stream_uses_the_latency() {
        let dir = crate::test_support::tokenizer_dir("smollm2-135m-instruct");
        let tok = Tokenizer::load(dir.to_str().unwrap()).unwrap();
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        r.completed_at = r.sent_at + Duration::from_millis(80);
        let body = br#"{"choices":[{"message":{"role":"assistant","reasoning_content":"Let me think about it carefully.","content":"Yes."}}],"usage":{"prompt_tokens":5,"completion_tokens":12}}"#;
        assert!(crate::api::openai_event::apply_body(&mut r, body));
        r.success = true;
        let s = split(&r, Some(&tok)).unwrap();
        let want = tok.count("Let me think about it carefully.").unwrap() as u64;
        assert_eq!(s.reasoning_tokens, Some(want));
        assert_eq!(s.answer_tokens, Some(12 - want));
        assert_eq!(s.first_reasoning_s, Some(0.08));
        assert_eq!(s.first_answer_s, Some(0.08));
        // Neither usage nor a tokenizer: the count is unknown, the times are still known.
        let s = split(&r, None).unwrap();
        assert_eq!((s.reasoning_tokens, s.answer_tokens), (None, None));
        assert_eq!(s.first_answer_s, Some(0.08));
    }

    #[test]
    fn plain_responses_have_no_split() {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        apply_stream_event(
            &mut r,
            br#"{"choices":[{"delta":{"content":"hi"}}]}"#,
            Instant::now(),
        );
        r.success = true;
        r.is_stream = true;
        assert_eq!(split(&r, None), None);
        assert!(ReasoningStats::default().summary_keys().is_empty());
    }
}
