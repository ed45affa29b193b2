//! `--dataset-args` `prefix_file`: the real-text prefix that fills a prompt, or a whole conversation, up to
//! `target_input_len` tokens, as evalscope 1.14.1 builds it (`fit_prefix_to_budget`, `prepare_conversation`):
//!
//! * the prefix file's token ids are tiled to the budget, decoded without special tokens and re-encoded;
//!   a re-encoding longer than the budget is cut, a shorter one topped up with the next ids of the tiled
//!   pool, until it has exactly the budget (at most [`MAX_ROUNDS`] rounds; tokenizers do not keep a
//!   length through decode and encode, so a plain slice comes back short or long);
//! * a conversation's budget is `target_input_len` minus the bare content tokens of every message, summed
//!   (no chat template); a conversation already longer than the target is skipped, never cut.

use anyhow::{bail, Result};
use serde_json::{json, Value};

use crate::tokenizer::Tokenizer;

/// Refinement rounds of the decode/re-encode loop (evalscope's `max_retry`).
pub const MAX_ROUNDS: usize = 10;

/// Text of exactly `budget` tokens (as close as the tokenizer allows within [`MAX_ROUNDS`] rounds) taken
/// from `prefix_ids` repeated; empty for a budget of 0.
pub fn fill(tok: &Tokenizer, prefix_ids: &[u32], budget: usize) -> Result<String> {
    if budget == 0 {
        return Ok(String::new());
    }
    if prefix_ids.is_empty() {
        bail!("--dataset-args prefix_file has no tokens to fill {budget} tokens with");
    }
    // The pool is whole copies of the prefix, at least `budget` ids; `cursor` is the first id not used
    // yet (the top-up continues there).
    let mut pool: Vec<u32> = prefix_ids.to_vec();
    while pool.len() < budget {
        pool.extend_from_slice(prefix_ids);
    }
    let mut cursor = budget;
    let mut ids = pool[..budget].to_vec();
    for round in 0..=MAX_ROUNDS {
        let text = tok.decode_skip_special(&ids)?;
        ids = tok.encode(&text)?;
        if ids.len() == budget || round == MAX_ROUNDS {
            if ids.len() != budget {
                tracing::warn!(
                    "prefix_file: the prefix came to {} tokens instead of {budget} after {MAX_ROUNDS} rounds (the tokenizer does not keep lengths through decode and encode)",
                    ids.len()
                );
            }
            return Ok(text);
        }
        if ids.len() > budget {
            ids.truncate(budget);
        } else {
            let need = budget - ids.len();
            while pool.len() < cursor + need {
                pool.extend_from_slice(prefix_ids);
            }
            ids.extend_from_slice(&pool[cursor..cursor + need]);
            cursor += need;
        }
    }
    unreachable!("the last round returns")
}

/// The bare content tokens of one message (no chat template, no special tokens); a content that is not a
/// string counts 0.
fn content_tokens(tok: &Tokenizer, message: &Value) -> Result<usize> {
    match message.get("content").and_then(Value::as_str) {
        Some(text) => tok.count(text),
        None => Ok(0),
    }
}

/// evalscope's `prepare_conversation`: `messages` (ending with a user turn) filled up to `target` tokens
/// by a prefix from `prefix_ids`, as a leading system message (`system`) or before the first message's
/// content; `None` when the conversation alone is longer than `target` (it is skipped).
pub fn fit_conversation(
    tok: &Tokenizer,
    prefix_ids: &[u32],
    target: usize,
    system: bool,
    mut messages: Vec<Value>,
) -> Result<Option<Vec<Value>>> {
    let mut total = 0;
    for m in &messages {
        total += content_tokens(tok, m)?;
    }
    if total > target {
        return Ok(None);
    }
    let prefix = fill(tok, prefix_ids, target - total)?;
    if prefix.is_empty() {
        return Ok(Some(messages));
    }
    if system {
        messages.insert(0, json!({"role": "system", "content": prefix}));
    } else if let Some(first) = messages.first_mut() {
        let content = first.get("content").and_then(Value::as_str).unwrap_or("");
        first["content"] = json!(format!("{prefix}{content}"));
    }
    Ok(Some(messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen3() -> Tokenizer {
        let dir = crate::test_support::tokenizer_dir("qwen3");
        Tokenizer::load(dir.to_str().unwrap()).unwrap()
    }

    #[test]
    fn a_drifting_prefix_is_topped_up_to_the_budget_as_evalscope_does() {
        let tok = qwen3();
        let ids = tok.encode("The quick brown fox.").unwrap();
        assert_eq!(ids.len(), 5);
        // A plain slice of the tiled ids re-encodes short: ".The" merges into one token.
        let naive = tok
            .decode_skip_special(&ids.iter().copied().cycle().take(9).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(tok.count(&naive).unwrap(), 8);
        // evalscope 1.14.1's `fit_prefix_to_budget(ids, 9, qwen3)` returns this text (run by hand).
        let text = fill(&tok, &ids, 9).unwrap();
        assert_eq!(text, "The quick brown fox.The quick brown fox.");
        assert_eq!(tok.count(&text).unwrap(), 9);
        for budget in [10, 37, 100, 500] {
            let text = fill(&tok, &ids, budget).unwrap();
            assert_eq!(tok.count(&text).unwrap(), budget, "{budget}");
        }
        assert_eq!(fill(&tok, &ids, 0).unwrap(), "");
    }

    #[test]
    fn a_prefix_that_cannot_converge_stops_after_the_last_round_with_evalscopes_text() {
        let tok = qwen3();
        let ids = tok.encode("==").unwrap();
        // evalscope 1.14.1 gives 174 '=' (4 tokens) for a 10-token budget, with a warning.
        let text = fill(&tok, &ids, 10).unwrap();
        assert_eq!(text, "=".repeat(174));
        assert!(fill(&tok, &[], 3).is_err(), "no ids to fill with");
    }

    #[test]
    fn a_conversation_budget_counts_every_message_and_too_long_ones_are_skipped() {
        let tok = qwen3();
        let ids = tok.encode("The quick brown fox.").unwrap();
        let conv = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": "yo"}),
            json!({"role": "user", "content": "abc"}),
        ];
        let content: usize = ["hi", "yo", "abc"]
            .iter()
            .map(|t| tok.count(t).unwrap())
            .sum();
        let out = fit_conversation(&tok, &ids, 20, true, conv.clone())
            .unwrap()
            .unwrap();
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["role"], "system");
        assert_eq!(&out[1..], &conv[..], "the conversation is not changed");
        let prefix = out[0]["content"].as_str().unwrap();
        assert_eq!(tok.count(prefix).unwrap(), 20 - content);
        // `prefix_role` user: before the first message's content.
        let out = fit_conversation(&tok, &ids, 20, false, conv.clone())
            .unwrap()
            .unwrap();
        assert_eq!(out.len(), 3);
        let first = out[0]["content"].as_str().unwrap();
        assert!(first.ends_with("hi") && first.len() > 2, "{first}");
        assert_eq!(out[2]["content"], "abc");
        // Exactly the target: nothing added; one token short of the conversation: skipped.
        let exact = fit_conversation(&tok, &ids, content, true, conv.clone()).unwrap();
        assert_eq!(exact, Some(conv.clone()));
        assert_eq!(
            fit_conversation(&tok, &ids, content - 1, true, conv).unwrap(),
            None
        );
    }
}
