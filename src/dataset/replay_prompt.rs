//! Prompts of the recorded lengths for a replayed trace. A prompt is a run of blocks ([`BlockKey`]): the
//! content of a block depends only on its key (and `--seed`), so requests that name the same hash ids
//! send the same leading blocks and a server's prefix cache sees the sharing the trace recorded.
//!
//! * With `--tokenizer-path`: each block is `len` token ids drawn from the tokenizer's allowed vocabulary
//!   with the block's own seed; the request's ids are decoded and re-encoded until the text encodes to
//!   exactly the recorded length (corrections touch only the end), less the chat template's own tokens
//!   when a template applies. `--tokenize-prompt` sends the ids themselves.
//! * Without it: one word per token (the simulator's unit; on a real server the lengths are approximate).
//!   Each block opens with a word naming its key, so two different blocks differ from their first word.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::random::Vocab;
use crate::tokenizer::Tokenizer;
use crate::traces::replay::{BlockKey, ReplayTrace};
use crate::traces::workload_trace::TraceRequest;

/// The words of a tokenizer-less prompt.
const WORDS: [&str; 32] = [
    "the", "model", "serves", "a", "request", "with", "cached", "blocks", "of", "tokens", "from",
    "earlier", "prompts", "while", "new", "text", "is", "computed", "again", "for", "every",
    "user", "and", "each", "turn", "adds", "more", "context", "to", "its", "history", "now",
];

/// How the prompts are shaped.
pub struct PromptShape {
    /// `--tokenizer-path`, for token-exact prompts.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Chat messages (else a completions `prompt`).
    pub chat: bool,
    /// `--tokenize-prompt`: token ids as the prompt.
    pub tokenize_prompt: bool,
    /// `chat_template_kwargs` for the template's token count.
    pub template_kwargs: Map<String, Value>,
    /// `--seed`: the blocks' content.
    pub seed: u64,
}

/// The replayed requests and each one's prompt tokens the trace implies a prefix cache would serve.
pub struct Built {
    /// In replay order.
    pub requests: Vec<TraceRequest>,
    /// Per request.
    pub implied_cached_tokens: Vec<u64>,
    /// Per request: the recorded input length.
    pub input_tokens: Vec<u64>,
}

fn block_seed(key: BlockKey, seed: u64) -> u64 {
    let mut h = DefaultHasher::new();
    (key, seed).hash(&mut h);
    h.finish()
}

fn block_words(key: BlockKey, len: u64, seed: u64, out: &mut Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(block_seed(key, seed));
    out.push(match key {
        BlockKey::Shared(h) => format!("block{h}"),
        BlockKey::Own(r, b) => format!("request{r}.{b}"),
    });
    for _ in 1..len {
        out.push(WORDS[rng.random_range(0..WORDS.len())].to_string());
    }
}

fn block_ids(vocab: &Vocab, key: BlockKey, len: u64, seed: u64, out: &mut Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(block_seed(key, seed));
    out.extend((0..len).map(|_| vocab.draw(&mut rng)));
}

/// The body of one prompt (messages or a completions prompt).
fn body(shape: &PromptShape, prompt: Value) -> Map<String, Value> {
    let mut b = Map::new();
    if shape.chat && prompt.is_string() {
        b.insert(
            "messages".into(),
            json!([{"role": "user", "content": prompt}]),
        );
    } else {
        b.insert("prompt".into(), prompt);
    }
    b
}

/// Builds every request of `trace`; fails only when the tokenizer cannot encode or decode.
pub fn build(trace: &ReplayTrace, shape: &PromptShape) -> Result<Built> {
    let vocab = shape.tokenizer.clone().map(Vocab::new).transpose()?;
    let template_tokens = match (&shape.tokenizer, shape.chat && !shape.tokenize_prompt) {
        (Some(tok), true) => tok.chat_token_count(
            &[json!({"role": "user", "content": ""})],
            &shape.template_kwargs,
        )? as u64,
        _ => 0,
    };
    let block_size = trace.args.block_size;
    let mut requests = Vec::with_capacity(trace.records.len());
    let mut mismatched = 0u64;
    for (i, r) in trace.records.iter().enumerate() {
        let blocks = r.blocks(i as u64, block_size);
        let (prompt, intended) = match &vocab {
            None => {
                let mut words = Vec::with_capacity(r.input_tokens as usize);
                for (key, len) in blocks {
                    block_words(key, len, shape.seed, &mut words);
                }
                (Value::String(words.join(" ")), None)
            }
            Some(vocab) => {
                let mut ids = Vec::with_capacity(r.input_tokens as usize);
                for (key, len) in blocks {
                    block_ids(vocab, key, len, shape.seed, &mut ids);
                }
                if shape.tokenize_prompt {
                    (json!(ids), Some(r.input_tokens))
                } else {
                    let target = r.input_tokens.saturating_sub(template_tokens).max(1) as usize;
                    ids.truncate(target);
                    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed ^ (i as u64));
                    let (text, mismatch) = vocab.converge(ids, target, &mut rng)?;
                    mismatched += u64::from(mismatch != 0);
                    (Value::String(text), Some(target as u64 + template_tokens))
                }
            }
        };
        let mut b = body(shape, prompt);
        if trace.args.match_output_length && r.output_tokens > 0 {
            b.insert("max_tokens".into(), json!(r.output_tokens));
            b.insert("ignore_eos".into(), json!(true));
        }
        requests.push(TraceRequest {
            body: b,
            offset_s: r.offset_s,
            headers: Vec::new(),
            request_id: None,
            intended_prompt_tokens: intended,
        });
    }
    if mismatched > 0 {
        tracing::warn!(
            "{}: {mismatched} prompt(s) did not reach their exact recorded length with this tokenizer",
            trace.format.dataset()
        );
    }
    if vocab.is_none() {
        tracing::warn!(
            "{}: without --tokenizer-path the prompts have one word per recorded token (exact on the simulator, approximate on a real server); give --tokenizer-path for token-exact prompts",
            trace.format.dataset()
        );
    }
    Ok(Built {
        implied_cached_tokens: trace.implied_cached_tokens(),
        input_tokens: trace.records.iter().map(|r| r.input_tokens).collect(),
        requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::replay::{Format, ReplayArgs, ReplayRecord};

    fn trace() -> ReplayTrace {
        let rec = |offset_s: f64, input: u64, ids: &[u64]| ReplayRecord {
            offset_s,
            input_tokens: input,
            output_tokens: 3,
            hash_ids: ids.to_vec(),
        };
        ReplayTrace {
            format: Format::Mooncake,
            args: ReplayArgs {
                speed: 1.0,
                match_output_length: true,
                block_size: 4,
            },
            records: vec![rec(0.0, 8, &[0, 1]), rec(0.5, 10, &[0, 1, 2])],
        }
    }

    #[test]
    fn word_prompts_share_exactly_the_shared_blocks() {
        let shape = PromptShape {
            tokenizer: None,
            chat: true,
            tokenize_prompt: false,
            template_kwargs: Map::new(),
            seed: 1,
        };
        let built = build(&trace(), &shape).unwrap();
        let words = |i: usize| -> Vec<String> {
            built.requests[i].body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let (a, b) = (words(0), words(1));
        assert_eq!((a.len(), b.len()), (8, 10));
        assert_eq!(a[..], b[..8]);
        assert_eq!(b[8], "block2");
        assert_eq!(built.implied_cached_tokens, vec![0, 8]);
        assert_eq!(built.requests[1].body["max_tokens"], 3);
        assert_eq!(built.requests[1].body["ignore_eos"], true);
        assert_eq!(built.requests[1].offset_s, 0.5);
    }
}
