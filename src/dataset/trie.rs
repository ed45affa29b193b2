//! The trie agentic workloads (evalscope's `plugin/datasets/trie.py`; traces of applied-compute/trie,
//! re-hosted as `evalscope/trie-workloads`): each JSONL trace becomes one conversation of
//! `num_turns + 1` turns whose text is synthesized to the recorded token lengths.
//!
//! Trace keys: `input_prompt_length`, `num_turns`, `assistant_response_length` / `tool_call_output_length` /
//! `tool_call_latency` (one per turn), `final_assistant_response_length`. Turn 0 is a user prompt of
//! `input_prompt_length` tokens capped at `assistant_response_length[0]` output tokens; turn `i + 1` is the
//! tool output of `tool_call_output_length[i]` tokens, sent `tool_call_latency[i]` seconds after the
//! previous answer, capped at the next recorded response length (the final one for the last turn).
//! Malformed traces are skipped with a warning, as evalscope does. Send `--extra-args '{"ignore_eos":
//! true}'` so the recorded lengths are honoured.

use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::random::Vocab;
use super::trie_error::TrieTraceError;
use super::turn::{Conversation, Turn};
use crate::plan::DatasetKind;

/// The hub file of a trie dataset.
pub fn file_name(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::TrieCodeQa => "code_qa_8k.jsonl",
        DatasetKind::TrieOfficeWork => "office_work_8k.jsonl",
        _ => "agentic_coding_8k.jsonl",
    }
}

/// Text that the tokenizer encodes to `target` tokens (at least one), from a random vocabulary window.
fn synth(vocab: &Vocab, target: u64, rng: &mut ChaCha8Rng) -> Result<String> {
    let target = target.max(1) as usize;
    let start = rng.random_range(0..vocab.allowed.len());
    let ids = vocab.allowed_window(start, target);
    Ok(vocab.converge(ids, target, rng)?.0)
}

fn user(text: String) -> Value {
    json!({"role": "user", "content": text})
}

/// One trace as a conversation; `Err` names what is wrong with it.
fn conversation(
    trace: &Value,
    vocab: &Vocab,
    rng: &mut ChaCha8Rng,
) -> Result<Conversation, TrieTraceError> {
    let int = |k: &'static str| {
        trace
            .get(k)
            .and_then(Value::as_u64)
            .ok_or(TrieTraceError::Key(k))
    };
    let list = |k: &'static str| {
        trace
            .get(k)
            .and_then(Value::as_array)
            .ok_or(TrieTraceError::Key(k))
    };
    let input = int("input_prompt_length")?;
    let n = int("num_turns")? as usize;
    let response = list("assistant_response_length")?;
    let tool_output = list("tool_call_output_length")?;
    let latency = list("tool_call_latency")?;
    let last = int("final_assistant_response_length")?;
    if response.len() != n || tool_output.len() != n || latency.len() != n {
        return Err(TrieTraceError::LengthMismatch {
            turns: n,
            responses: response.len(),
            tool_outputs: tool_output.len(),
            latencies: latency.len(),
        });
    }
    let entry = |list: &'static str, index: usize| TrieTraceError::Entry { list, index };
    let cap = |i: usize| -> Result<u64, TrieTraceError> {
        if i >= n {
            return Ok(last);
        }
        response[i]
            .as_u64()
            .ok_or(entry("assistant_response_length", i))
    };
    let text = |len: u64, rng: &mut ChaCha8Rng| {
        synth(vocab, len, rng).map_err(|e| TrieTraceError::Synth(e.to_string()))
    };
    let mut turns = vec![Turn {
        messages: vec![user(text(input, rng)?)],
        max_tokens: Some(cap(0)?),
        tool_latency_s: None,
        rid: None,
    }];
    for i in 0..n {
        let len = tool_output[i]
            .as_u64()
            .ok_or(entry("tool_call_output_length", i))?;
        let wait = latency[i]
            .as_f64()
            .filter(|s| *s >= 0.0)
            .ok_or(entry("tool_call_latency", i))?;
        turns.push(Turn {
            messages: vec![user(text(len, rng)?)],
            max_tokens: Some(cap(i + 1)?),
            tool_latency_s: Some(wait),
            rid: None,
        });
    }
    Ok(turns)
}

/// The first `limit` valid traces of `text` as conversations (seeded by `--seed` when given).
pub fn conversations(
    text: &str,
    vocab: &Vocab,
    limit: usize,
    seed: Option<u64>,
) -> Result<Vec<Conversation>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.unwrap_or_else(rand::random));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<Value>(line)
            .map_err(|e| TrieTraceError::Json(e.to_string()))
            .and_then(|trace| conversation(&trace, vocab, &mut rng));
        match parsed {
            Ok(c) => out.push(c),
            Err(e) => tracing::warn!("Skipping malformed trace (line {}): {e}", n + 1),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// evalscope's `test_distinct_file_names`: each trie dataset reads its own `.jsonl` file.
    #[test]
    fn each_trie_dataset_reads_its_own_file() {
        let names = [
            DatasetKind::TrieAgenticCoding,
            DatasetKind::TrieCodeQa,
            DatasetKind::TrieOfficeWork,
        ]
        .map(file_name);
        assert_eq!(
            names,
            [
                "agentic_coding_8k.jsonl",
                "code_qa_8k.jsonl",
                "office_work_8k.jsonl"
            ]
        );
    }
}
