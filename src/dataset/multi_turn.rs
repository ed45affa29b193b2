//! The multi-turn datasets (spec §3): each item is a whole conversation, a list of [`Turn`]s whose
//! messages are the delta the next request appends to the history (the server's real answers are
//! appended by the conversation driver, never the dataset's).
//!
//! * `random_multi_turn`: `randint(min_turns, max_turns)` user turns per conversation, each a random token
//!   window of `randint(min, max)` tokens (`--min/--max-prompt-length`, no chat-template adjustment, as
//!   evalscope); needs `--tokenizer-path`.
//! * `share_gpt_zh_multi_turn` / `share_gpt_en_multi_turn`: one turn per non-empty `human` message of a
//!   `swift/sharegpt` line (assistant text discarded), truncated to `--max-turns`; a conversation is kept
//!   when its first user message passes the length filter.
//! * `swe_smith`: a pre-built `agentic_dataset.json` (see [`super::swe_smith`]), or without
//!   `--dataset-path` conversations built per run from the SWE-smith trajectories (see
//!   [`super::swe_smith_live`]).
//! * `custom_multi_turn`: JSONL lines of message arrays; turns are the runs of non-assistant messages
//!   between assistant messages; malformed lines are skipped with a warning, as evalscope.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::random::{RandomPrompt, RandomText, Vocab};
pub use super::turn::{Conversation, Turn};
use super::Shaper;
use crate::plan::{DatasetKind, MultiTurnSettings, RunPlan};
use crate::tokenizer::Tokenizer;

/// Where a sweep's conversations come from.
pub enum ConversationSource {
    /// Read from a file once, cycled.
    Fixed(Vec<Conversation>),
    /// Every conversation of the file (empty ones included), rotated by the run's `--dataset-offset`
    /// before the empty ones are dropped and the run's are taken (`swe_smith`).
    Rotated(Vec<Conversation>),
    /// Built per run from the hub's trajectories (`swe_smith` without `--dataset-path`).
    Live(super::swe_smith_live::Live),
    /// Generated per run (`random_multi_turn`).
    Random {
        /// Token windows of the drawn lengths.
        text: RandomText,
        /// Turn-count bounds, inclusive.
        turns: (u64, u64),
    },
}

/// Loads the conversations of a `--multi-turn` plan (at most `limit` from a file).
pub fn load(
    plan: &RunPlan,
    settings: &MultiTurnSettings,
    kind: DatasetKind,
    path: Option<&Path>,
    shaper: &Shaper,
    tokenizer: Option<Arc<Tokenizer>>,
    limit: usize,
) -> Result<ConversationSource> {
    if kind == DatasetKind::RandomMultiTurn {
        let Some(tok) = tokenizer else {
            bail!("--dataset random_multi_turn needs --tokenizer-path");
        };
        let text = RandomText::new(
            Vocab::new(tok)?,
            plan.prompt_length,
            0,
            plan.tokens.prefix_length,
            plan.tokens.prefix_count,
            false,
        )?;
        let max = settings.max_turns.unwrap_or(settings.min_turns);
        return Ok(ConversationSource::Random {
            text,
            turns: (settings.min_turns, max),
        });
    }
    if kind == DatasetKind::SweSmith && path.is_none() {
        let live = super::swe_smith_live::load(plan, settings, tokenizer)?;
        return Ok(ConversationSource::Live(live));
    }
    let resolved;
    let path = match kind {
        DatasetKind::ShareGptZhMultiTurn
        | DatasetKind::ShareGptEnMultiTurn
        | DatasetKind::TrieAgenticCoding
        | DatasetKind::TrieCodeQa
        | DatasetKind::TrieOfficeWork => {
            resolved = super::hub_files::file_for(kind, path, plan.data_source)?;
            resolved.as_path()
        }
        _ => match path {
            Some(path) => path,
            None => bail!("--dataset {} needs --dataset-path", kind.name()),
        },
    };
    let convs = match kind {
        DatasetKind::ShareGptZhMultiTurn | DatasetKind::ShareGptEnMultiTurn => {
            let name = if kind == DatasetKind::ShareGptZhMultiTurn {
                "common_zh_70k.jsonl"
            } else {
                "common_en_70k.jsonl"
            };
            let file = super::conversations::sharegpt_file(path, name)?;
            share_gpt(&read(&file)?, settings.max_turns, shaper, limit, &file)?
        }
        DatasetKind::CustomMultiTurn => custom(&read(path)?, settings.max_turns, shaper, limit)?,
        DatasetKind::SweSmith => {
            let all = super::swe_smith::conversations(path)?;
            if all.iter().any(|c| !c.is_empty()) {
                return Ok(ConversationSource::Rotated(all));
            }
            Vec::new()
        }
        DatasetKind::TrieAgenticCoding | DatasetKind::TrieCodeQa | DatasetKind::TrieOfficeWork => {
            let Some(tok) = tokenizer else {
                bail!("--dataset {} needs --tokenizer-path", kind.name());
            };
            let file = super::conversations::sharegpt_file(path, super::trie::file_name(kind))?;
            super::trie::conversations(&read(&file)?, &Vocab::new(tok)?, limit, plan.params.seed)?
        }
        other => bail!("--dataset {} is not a multi-turn dataset", other.name()),
    };
    if convs.is_empty() {
        bail!(
            "Dataset \"{}\" produced no conversations! (--dataset-path {}, --min-prompt-length {}, --max-prompt-length {})",
            kind.name(),
            path.display(),
            plan.prompt_length.0,
            plan.prompt_length.1
        );
    }
    Ok(ConversationSource::Fixed(convs))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// `share_gpt_*_multi_turn`: one user turn per non-empty `human` message.
fn share_gpt(
    text: &str,
    max_turns: Option<u64>,
    shaper: &Shaper,
    limit: usize,
    file: &Path,
) -> Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {}: not valid JSON", file.display(), n + 1))?;
        let Some(list) = record.get("conversation").and_then(Value::as_array) else {
            continue;
        };
        let mut humans: Vec<&str> = Vec::new();
        for t in list {
            let h = t.get("human").and_then(Value::as_str).unwrap_or("").trim();
            if h.is_empty() {
                continue;
            }
            if max_turns.is_some_and(|m| humans.len() as u64 >= m) {
                break;
            }
            humans.push(h);
        }
        let Some(first) = humans.first() else {
            continue;
        };
        if shaper.fits(first)? {
            out.push(humans.iter().map(|h| Turn::new(vec![user(h)])).collect());
        }
    }
    Ok(out)
}

/// `custom_multi_turn`: turns split at assistant messages (whose content is discarded).
fn custom(
    text: &str,
    max_turns: Option<u64>,
    shaper: &Shaper,
    limit: usize,
) -> Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let messages = match serde_json::from_str::<Value>(line) {
            Ok(Value::Array(m)) if !m.is_empty() => m,
            Ok(_) => {
                tracing::warn!("Skipping line {}: expected a non-empty JSON array.", n + 1);
                continue;
            }
            Err(e) => {
                tracing::warn!("Skipping malformed JSON line {}: {e}", n + 1);
                continue;
            }
        };
        if !messages
            .iter()
            .all(|m| m.get("role").is_some() && m.get("content").is_some())
        {
            tracing::warn!(
                "Skipping line {}: each message must have \"role\" and \"content\" fields.",
                n + 1
            );
            continue;
        }
        let mut turns: Vec<Vec<Value>> = Vec::new();
        let mut current: Vec<Value> = Vec::new();
        for m in messages {
            if m["role"] == "assistant" {
                if !current.is_empty() {
                    turns.push(std::mem::take(&mut current));
                }
            } else {
                current.push(m);
            }
        }
        if !current.is_empty() {
            turns.push(current);
        }
        if let Some(m) = max_turns {
            turns.truncate(m as usize);
        }
        if turns.is_empty() {
            continue;
        }
        let first_user = turns[0]
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str());
        let fits = match first_user {
            Some(t) => shaper.fits(t)?,
            None => true,
        };
        if fits {
            out.push(turns.into_iter().map(Turn::new).collect());
        }
    }
    Ok(out)
}

impl ConversationSource {
    /// The `total` conversations of one run (warmup first), in order. `dataset_offset` and `seed` steer
    /// `random_multi_turn`.
    pub fn for_run(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
    ) -> Result<Vec<Conversation>> {
        match self {
            ConversationSource::Fixed(convs) => Ok(convs.iter().take(total).cloned().collect()),
            ConversationSource::Rotated(convs) => {
                // evalscope: `conversations[offset:] + conversations[:offset]` when offset > 0.
                let start = usize::try_from(dataset_offset)
                    .ok()
                    .filter(|&o| o < convs.len())
                    .unwrap_or(0);
                Ok(convs[start..]
                    .iter()
                    .chain(&convs[..start])
                    .filter(|c| !c.is_empty())
                    .take(total)
                    .cloned()
                    .collect())
            }
            ConversationSource::Live(live) => live.for_run(total, dataset_offset, seed),
            ConversationSource::Random { text, turns } => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7E57_C0DE);
                let counts: Vec<u64> = (0..total)
                    .map(|_| rng.random_range(turns.0..=turns.1))
                    .collect();
                let slots = counts.iter().sum::<u64>() as usize;
                let draws = text.draws(slots, dataset_offset, seed);
                let mut slot = 0;
                let mut out = Vec::with_capacity(total);
                for n in counts {
                    let mut conv = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        let prompt = match text.item(&draws, slot)?.prompt {
                            RandomPrompt::Text(t) => t,
                            RandomPrompt::Ids(ids) => text.vocab().tok.decode(&ids)?,
                        };
                        conv.push(Turn::new(vec![user(&prompt)]));
                        slot += 1;
                    }
                    out.push(conv);
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_splits_turns_at_assistant_messages() {
        let text = concat!(
            r#"[{"role":"system","content":"s"},{"role":"user","content":"u1"},{"role":"assistant","content":"a"},{"role":"user","content":"u2"}]"#,
            "\nnot json\n[]\n",
            r#"[{"role":"user"}]"#,
            "\n",
            r#"[{"role":"user","content":"x1"},{"role":"assistant","content":"a"},{"role":"user","content":"x2"},{"role":"assistant","content":"b"},{"role":"user","content":"x3"}]"#,
        );
        let shaper = Shaper::chars(true, (0, 100));
        let convs = custom(text, Some(2), &shaper, 10).unwrap();
        assert_eq!(convs.len(), 2);
        assert_eq!(
            convs[0][0].messages,
            vec![
                json!({"role":"system","content":"s"}),
                json!({"role":"user","content":"u1"})
            ]
        );
        assert_eq!(
            convs[0][1].messages,
            vec![json!({"role":"user","content":"u2"})]
        );
        assert_eq!(convs[1].len(), 2, "truncated to --max-turns");
    }

    #[test]
    fn share_gpt_keeps_humans_and_filters_on_the_first() {
        let text = concat!(
            r#"{"conversation":[{"human":"hi","assistant":"x"},{"human":" ","assistant":"y"},{"human":"more","assistant":"z"}]}"#,
            "\n",
            r#"{"conversation":[{"human":"this first message is far too long","assistant":"x"}]}"#,
            "\n",
        );
        let shaper = Shaper::chars(true, (0, 10));
        let convs = share_gpt(text, None, &shaper, 10, Path::new("f")).unwrap();
        assert_eq!(convs.len(), 1);
        assert_eq!(convs[0].len(), 2);
        assert_eq!(convs[0][1].messages, vec![user("more")]);
        let convs = share_gpt(text, Some(1), &shaper, 10, Path::new("f")).unwrap();
        assert_eq!(convs[0].len(), 1);
    }
}
