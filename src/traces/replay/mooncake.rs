//! Mooncake JSONL traces: one object per line, `timestamp` (milliseconds since the first request),
//! `input_length` (≥ 1), `output_length`, `hash_ids` (one id per block of `block_size` tokens; optional).
//! Other keys are ignored (other tools add their own), with one warning naming them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Parsed, ReplayRecord};
use crate::traces::error::TraceError;

fn record(line: &str, block_size: u64, extra: &mut BTreeSet<String>) -> Result<Parsed, TraceError> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| TraceError::BadRecord(format!("invalid JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(TraceError::BadRecord(format!(
            "expected a JSON object, got {v}"
        )));
    };
    for k in obj.keys() {
        if !matches!(
            k.as_str(),
            "timestamp" | "input_length" | "output_length" | "hash_ids"
        ) {
            extra.insert(k.clone());
        }
    }
    let ts_ms = match obj.get("timestamp") {
        Some(t) => t
            .as_f64()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                TraceError::BadRecord(format!(
                    "timestamp must be a number of milliseconds ≥ 0, got {t}"
                ))
            })?,
        None => {
            return Err(TraceError::BadRecord(
                "missing \"timestamp\" (milliseconds)".to_string(),
            ))
        }
    };
    let input = match obj.get("input_length") {
        Some(v) => v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
            TraceError::BadRecord(format!("input_length must be an integer ≥ 1, got {v}"))
        })?,
        None => {
            return Err(TraceError::BadRecord(
                "missing \"input_length\"".to_string(),
            ))
        }
    };
    let output = match obj.get("output_length") {
        Some(v) => v.as_u64().ok_or_else(|| {
            TraceError::BadRecord(format!("output_length must be an integer ≥ 0, got {v}"))
        })?,
        None => {
            return Err(TraceError::BadRecord(
                "missing \"output_length\"".to_string(),
            ))
        }
    };
    let hash_ids = match obj.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|h| {
                h.as_u64().ok_or_else(|| {
                    TraceError::BadRecord(format!("hash_ids: {h} is not an integer ≥ 0"))
                })
            })
            .collect::<Result<Vec<u64>, TraceError>>()?,
        Some(other) => {
            return Err(TraceError::BadRecord(format!(
                "hash_ids must be an array of integers, got {other}"
            )))
        }
    };
    let blocks = input.div_ceil(block_size);
    if hash_ids.len() as u64 > blocks {
        return Err(TraceError::BadRecord(format!(
            "{} hash_ids but input_length {input} fills only {blocks} block(s) of {block_size} tokens; set --dataset-args '{{\"block_size\": N}}' to the trace's block size",
            hash_ids.len()
        )));
    }
    let record = ReplayRecord {
        offset_s: 0.0,
        input_tokens: input,
        output_tokens: output,
        hash_ids,
    };
    Ok((ts_ms / 1000.0, record))
}

/// The parsed lines (timestamps in seconds), the errors (`line N: …`) and the count of skipped lines (none).
pub(crate) fn parse(text: &str, block_size: u64) -> (Vec<Parsed>, Vec<String>, usize) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut extra = BTreeSet::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match record(line.trim(), block_size, &mut extra) {
            Ok(r) => out.push(r),
            Err(e) => errors.push(format!("line {}: {e}", n + 1)),
        }
    }
    if !extra.is_empty() {
        let names: Vec<String> = extra.into_iter().collect();
        tracing::warn!("mooncake_trace: ignoring the keys {}", names.join(", "));
    }
    (out, errors, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_parsed_and_every_bad_one_named() {
        let text = concat!(
            r#"{"timestamp": 1500, "input_length": 6, "output_length": 2, "hash_ids": [0, 1]}"#,
            "\n\n",
            r#"{"timestamp": 0, "input_length": 0, "output_length": 2}"#,
            "\n",
            r#"{"timestamp": 0, "input_length": 4, "output_length": 2, "hash_ids": [0, 1, 2]}"#,
            "\nnot json\n",
            r#"{"input_length": 4, "output_length": 2, "session_id": "s"}"#,
            "\n",
        );
        let (ok, errors, _) = parse(text, 4);
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].0, 1.5);
        assert_eq!(ok[0].1.hash_ids, vec![0, 1]);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].starts_with("line 3: input_length"), "{errors:?}");
        assert!(errors[1].starts_with("line 4: 3 hash_ids"), "{errors:?}");
        assert!(errors[2].starts_with("line 5: invalid JSON"), "{errors:?}");
        assert!(
            errors[3].starts_with("line 6: missing \"timestamp\""),
            "{errors:?}"
        );
    }
}
