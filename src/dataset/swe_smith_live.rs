//! `swe_smith` without `--dataset-path`: evalscope's live construction (`plugin/datasets/swe_smith.py`)
//! from the raw trajectories of `SWE-bench/SWE-smith-trajectories`, split `tool` (parquet; each row's
//! `messages` is a JSON list of chat messages), found in the hub caches or downloaded
//! ([`super::hub_files::swe_smith_trajectories`]).
//!
//! At load (once per sweep), every row is scanned:
//! * messages are normalised as evalscope's `_extract_messages`: a list `content` becomes its text parts
//!   joined by newlines; messages without a role or content are dropped; `tool` becomes `user`; roles
//!   other than `system`, `user`, `assistant` are dropped. A row that is not such a list is skipped
//!   (counted as a parse error).
//! * the character-length pre-filter: a row is a candidate when its raw `messages` text and the text of
//!   its user messages each have at least `int((first_upper + subsequent_upper × (max_turns − 1)) ×
//!   chars_per_token)` characters (the upper bounds of `first_turn_length` / `subsequent_turn_length`,
//!   `max_turns` = `--max-turns`, else `--min-turns`). Only the candidates' user messages are kept:
//!   nothing else is sent.
//!
//! Per run (seeded by the run's seed, so a `--seed` run is reproducible): the candidates are shuffled,
//! rotated by the run's `--dataset-offset` (`c[offset:] + c[:offset]`), and taken in turn; each draws its
//! `first_turn_length` and `subsequent_turn_length` (uniform in a `[min, max]` range) and its turn count
//! (uniform in `[--min-turns, max_turns]`), and becomes a conversation as evalscope's
//! `_build_conversation` builds one, until the run's conversation count (`--number` + warmup) is
//! reached:
//! * turn 1 collects user messages while their bare token counts (no special tokens) fit in
//!   `first_turn_length`; the message that would overflow it is cut to the tokens left (decoded without
//!   special tokens) and ends the turn; a budget already spent leaves the next message for the next turn.
//! * each later turn collects the same way up to `subsequent_turn_length`;
//! * a trajectory that runs out of user messages before its last turn, or a turn that collects nothing,
//!   is skipped.
//!
//! Each turn's messages are that turn's delta (`user` messages); the server's real answers go between
//! them. The prompt tokens of every turn (the whole history so far through the tokenizer's chat template,
//! with the generation prompt) are counted for the log, as evalscope does. No per-turn `max_tokens`: each
//! request draws its own from `--max-tokens`. The conversations are built in-process, one after the other
//! (`--num-workers` has no effect). The draws come from llmperf's generator, not numpy's, so the
//! conversations differ from evalscope's; the rules are the same.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::turn::{Conversation, Turn};
use crate::plan::{IntOrRange, MultiTurnSettings, RunPlan};
use crate::tokenizer::Tokenizer;

/// The live-construction source of a sweep: the candidate trajectories and the construction rules.
pub struct Live {
    /// Each candidate's user messages, in trajectory order.
    candidates: Vec<Vec<Box<str>>>,
    tokenizer: Arc<Tokenizer>,
    first_turn_length: IntOrRange,
    subsequent_turn_length: IntOrRange,
    /// `[min, max]` turns per conversation.
    turns: (u64, u64),
}

/// The outcome of the scan: candidates and what was skipped.
#[derive(Debug, Default, PartialEq)]
struct Scan {
    candidates: Vec<Vec<Box<str>>>,
    too_short: usize,
    unreadable: usize,
}

/// Loads the candidates of `swe_smith`'s live construction (the tool split, from the hub caches or
/// downloaded). Fails without a tokenizer with a chat template, or when no trajectory is long enough.
pub fn load(
    plan: &RunPlan,
    settings: &MultiTurnSettings,
    tokenizer: Option<Arc<Tokenizer>>,
) -> Result<Live> {
    let Some(tokenizer) = tokenizer else {
        bail!("Live construction mode requires --tokenizer-path for accurate token counting.  Please specify --tokenizer-path or provide a pre-built --dataset-path.");
    };
    if !tokenizer.has_chat_template() {
        bail!(
            "--dataset swe_smith (live construction) counts prompt tokens through the chat template of --tokenizer-path {}, which has none; use a chat model's tokenizer or a pre-built --dataset-path",
            tokenizer.source()
        );
    }
    let args = &settings.args;
    let turns = (
        settings.min_turns,
        settings.max_turns.unwrap_or(settings.min_turns),
    );
    let min_chars = min_chars(
        args.first_turn_length,
        args.subsequent_turn_length,
        turns.1,
        args.chars_per_token,
    );
    tracing::info!(
        "Live construction: min_turns={}, max_turns={}, min_chars={min_chars}",
        turns.0,
        turns.1
    );
    let copy = super::hub_files::swe_smith_trajectories(plan.data_source)?;
    let started = std::time::Instant::now();
    let scan = scan(copy.files.clone(), min_chars)?;
    tracing::info!(
        "Pre-filter: {} candidates ({} too short, {} parse error) in {:.1} s",
        scan.candidates.len(),
        scan.too_short,
        scan.unreadable,
        started.elapsed().as_secs_f64()
    );
    if scan.candidates.is_empty() {
        let shown: Vec<String> = copy.files.iter().map(|f| f.display().to_string()).collect();
        bail!(
            "--dataset swe_smith: no trajectory in {} has the {min_chars} characters of user text its turns need (first_turn_length {} + subsequent_turn_length {} × (max_turns {} - 1) tokens × chars_per_token {}); lower them in --dataset-args or --max-turns, or give a pre-built --dataset-path",
            shown.join(", "),
            args.first_turn_length.max,
            args.subsequent_turn_length.max,
            turns.1,
            args.chars_per_token
        );
    }
    Ok(Live {
        candidates: scan.candidates,
        tokenizer,
        first_turn_length: args.first_turn_length,
        subsequent_turn_length: args.subsequent_turn_length,
        turns,
    })
}

/// The characters a trajectory needs to pass the pre-filter (evalscope's `min_chars`).
fn min_chars(
    first: IntOrRange,
    subsequent: IntOrRange,
    max_turns: u64,
    chars_per_token: f64,
) -> u64 {
    let tokens = first.max + subsequent.max * max_turns.saturating_sub(1);
    (tokens as f64 * chars_per_token) as u64
}

/// Scans the `messages` column of `files` and keeps the user messages of the rows that pass the
/// pre-filter.
fn scan(files: Vec<PathBuf>, min_chars: u64) -> Result<Scan> {
    let mut out = Scan::default();
    for cell in super::parquet_rows::text_column(files, "messages") {
        let Some(raw) = cell? else {
            out.unreadable += 1;
            continue;
        };
        if char_count_below(&raw, min_chars) {
            out.too_short += 1;
            continue;
        }
        let Some(messages) = extract_messages(&raw) else {
            out.unreadable += 1;
            continue;
        };
        let user: Vec<Box<str>> = messages
            .into_iter()
            .filter(|(role, _)| *role == Role::User)
            .map(|(_, content)| content.into_boxed_str())
            .collect();
        let total: u64 = user.iter().map(|c| c.chars().count() as u64).sum();
        if total < min_chars {
            out.too_short += 1;
            continue;
        }
        out.candidates.push(user);
    }
    Ok(out)
}

/// Whether `text` has fewer than `n` characters (Python's `len`), without counting past `n`.
fn char_count_below(text: &str, n: u64) -> bool {
    (text.len() as u64) < n || (text.chars().take(n as usize).count() as u64) < n
}

/// A message role after normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    System,
    User,
    Assistant,
}

/// evalscope's `_extract_messages`: the normalised `(role, content)` list, `None` when `raw` is not a
/// JSON list of message objects (or a content is neither text nor a list of parts).
fn extract_messages(raw: &str) -> Option<Vec<(Role, String)>> {
    let parsed: Value = serde_json::from_str(raw).ok()?;
    let mut out = Vec::new();
    for msg in parsed.as_array()? {
        let msg = msg.as_object()?;
        // Python's truthiness: a falsy content is dropped with its message; a list is joined even when
        // the message is dropped later (a bad part fails the row, as evalscope's `TypeError`).
        let content = match msg.get("content") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => Some(joined_text(parts)?),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Some(String::new()),
            Some(Value::Object(o)) if o.is_empty() => Some(String::new()),
            Some(_) => None,
        };
        let role = match msg.get("role").and_then(Value::as_str) {
            Some("system") => Role::System,
            Some("user") | Some("tool") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => continue,
        };
        let content = content?;
        if content.is_empty() {
            continue;
        }
        out.push((role, content));
    }
    Some(out)
}

/// The text parts of a list content joined by newlines (`None` when a text part is not a string).
fn joined_text(parts: &[Value]) -> Option<String> {
    let mut texts = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Value::String(s) => texts.push(s.as_str()),
            Value::Object(p) if p.get("type").and_then(Value::as_str) == Some("text") => {
                match p.get("text") {
                    None => texts.push(""),
                    Some(Value::String(t)) => texts.push(t),
                    Some(_) => return None,
                }
            }
            _ => {}
        }
    }
    Some(texts.join("\n"))
}

/// One built conversation: each turn's delta and the prompt tokens after it.
struct Built {
    turns: Vec<Vec<String>>,
    prompt_tokens: Vec<usize>,
}

impl Live {
    /// The `total` conversations of one run (`max(1, total)` are built; fewer when the candidates run
    /// out), after shuffling the candidates with `seed` and rotating them by `dataset_offset`.
    pub fn for_run(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
    ) -> Result<Vec<Conversation>> {
        let target = total.max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5E5E_5A11_7A1E_0001);
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.shuffle(&mut rng);
        if let Ok(offset) = usize::try_from(dataset_offset) {
            if offset > 0 && offset < order.len() {
                order.rotate_left(offset);
            }
        }
        tracing::info!(
            "Building up to {target} conversations from {} candidates using 1 worker(s)...",
            order.len()
        );
        let mut built = Vec::with_capacity(target);
        let mut skipped = 0usize;
        for index in order {
            if built.len() >= target {
                break;
            }
            let first = draw(self.first_turn_length, &mut rng);
            let subsequent = draw(self.subsequent_turn_length, &mut rng);
            let num_turns = rng.random_range(self.turns.0..=self.turns.1);
            match self.build(&self.candidates[index], first, subsequent, num_turns)? {
                Some(c) => built.push(c),
                None => skipped += 1,
            }
        }
        tracing::info!(
            "Built {} conversations ({skipped} skipped during build)",
            built.len()
        );
        log_stats(&built);
        if built.is_empty() {
            bail!("Dataset \"swe_smith\" produced no conversations! None of the candidate trajectories has enough user messages to fill --min-turns turns of the drawn lengths; lower --min-turns / --max-turns or first_turn_length / subsequent_turn_length in --dataset-args");
        }
        Ok(built
            .into_iter()
            .map(|c| {
                c.turns
                    .into_iter()
                    .map(|delta| {
                        Turn::new(
                            delta
                                .into_iter()
                                .map(|text| json!({"role": "user", "content": text}))
                                .collect(),
                        )
                    })
                    .collect()
            })
            .collect())
    }

    /// evalscope's `_build_conversation`: `None` when the trajectory cannot fill `num_turns` turns.
    fn build(
        &self,
        user: &[Box<str>],
        first: u64,
        subsequent: u64,
        num_turns: u64,
    ) -> Result<Option<Built>> {
        let tok = &self.tokenizer;
        let mut history: Vec<Value> = Vec::new();
        let mut out = Built {
            turns: Vec::new(),
            prompt_tokens: Vec::new(),
        };
        let mut next = 0;
        for turn in 0..num_turns {
            if turn > 0 && next >= user.len() {
                return Ok(None);
            }
            let budget = if turn == 0 { first } else { subsequent };
            let (delta, after) = collect_until(user, next, budget, tok)?;
            if delta.is_empty() {
                return Ok(None);
            }
            next = after;
            history.extend(delta.iter().map(|t| json!({"role": "user", "content": t})));
            let counted = tok
                .chat_token_count(&history, &Map::new())
                .context("--dataset swe_smith: counting a turn's prompt tokens")?;
            out.prompt_tokens.push(counted);
            out.turns.push(delta);
        }
        Ok(Some(out))
    }
}

/// One value of an `IntOrRange` (uniform, bounds included).
fn draw(v: IntOrRange, rng: &mut impl Rng) -> u64 {
    if v.min == v.max {
        v.min
    } else {
        rng.random_range(v.min..=v.max)
    }
}

/// evalscope's `_collect_until`: user messages from `start` while their bare token counts fit in
/// `target`; the one that would overflow is cut to the tokens left (unless none are left). Returns the
/// messages and the index of the next unconsumed one.
fn collect_until(
    user: &[Box<str>],
    start: usize,
    target: u64,
    tok: &Tokenizer,
) -> Result<(Vec<String>, usize)> {
    let mut delta = Vec::new();
    let mut used = 0u64;
    let mut index = start;
    while let Some(message) = user.get(index) {
        let ids = tok.encode(message)?;
        let n = ids.len() as u64;
        if used + n <= target {
            delta.push(message.to_string());
            used += n;
            index += 1;
            continue;
        }
        let left = target - used;
        if left == 0 {
            break;
        }
        delta.push(tok.decode_skip_special(&ids[..left as usize])?);
        index += 1;
        break;
    }
    Ok((delta, index))
}

/// evalscope's summary lines of a build.
fn log_stats(built: &[Built]) {
    if built.is_empty() {
        return;
    }
    let line = |values: Vec<usize>| {
        let min = values.iter().min().copied().unwrap_or(0);
        let max = values.iter().max().copied().unwrap_or(0);
        let avg = values.iter().sum::<usize>() as f64 / values.len() as f64;
        (min, max, avg)
    };
    let (a, b, c) = line(built.iter().map(|c| c.turns.len()).collect());
    tracing::info!("  Turns per conversation : min={a}, max={b}, avg={c:.1}");
    let (a, b, c) = line(built.iter().map(|c| c.prompt_tokens[0]).collect());
    tracing::info!("  First turn prompt tokens: min={a}, max={b}, avg={c:.0}");
    let last = built.iter().map(|c| *c.prompt_tokens.last().unwrap_or(&0));
    let (a, b, c) = line(last.collect());
    tracing::info!("  Last  turn prompt tokens: min={a}, max={b}, avg={c:.0}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_normalised_as_evalscope() {
        let raw = r#"[
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, "b", {"type": "image"}]},
            {"role": "assistant", "content": "thinking"},
            {"role": "tool", "content": "OBSERVATION"},
            {"role": "function", "content": "dropped"},
            {"role": "user", "content": ""},
            {"content": "no role"},
            {"role": "user", "content": null}
        ]"#;
        assert_eq!(
            extract_messages(raw).unwrap(),
            vec![
                (Role::System, "sys".to_string()),
                (Role::User, "a\nb".to_string()),
                (Role::Assistant, "thinking".to_string()),
                (Role::User, "OBSERVATION".to_string()),
            ]
        );
        assert_eq!(extract_messages("not json"), None);
        assert_eq!(extract_messages(r#"{"role": "user"}"#), None);
        assert_eq!(
            extract_messages(r#"[{"role": "user", "content": 5}]"#),
            None
        );
        assert_eq!(
            extract_messages(r#"[{"role": "user", "content": [{"type": "text", "text": 1}]}]"#),
            None
        );
    }

    fn qwen3() -> Arc<Tokenizer> {
        let dir = crate::test_support::tokenizer_dir("qwen3");
        Arc::new(Tokenizer::load(dir.to_str().unwrap()).unwrap())
    }

    fn boxed(texts: &[&str]) -> Vec<Box<str>> {
        texts.iter().map(|t| Box::from(*t)).collect()
    }

    #[test]
    fn turns_collect_whole_messages_and_cut_the_one_that_overflows() {
        let tok = qwen3();
        let user = boxed(&[
            "fix the failing test",
            "OBSERVATION: two tests failed in utils",
            "OBSERVATION: the patch applied cleanly",
        ]);
        let n: Vec<u64> = user.iter().map(|m| tok.count(m).unwrap() as u64).collect();
        // An exact fit: the budget is spent, the next message waits for the next turn.
        let (delta, next) = collect_until(&user, 0, n[0] + n[1], &tok).unwrap();
        assert_eq!(delta, [user[0].to_string(), user[1].to_string()]);
        assert_eq!(next, 2);
        // The overflowing message is cut to the tokens left and consumed.
        let (delta, next) = collect_until(&user, 0, n[0] + 2, &tok).unwrap();
        assert_eq!(delta.len(), 2);
        assert_eq!(tok.count(&delta[1]).unwrap(), 2);
        assert!(user[1].starts_with(&delta[1]) && delta[1].len() < user[1].len());
        assert_eq!(next, 2);
        assert_eq!(collect_until(&user, 0, 0, &tok).unwrap(), (Vec::new(), 0));
        assert_eq!(collect_until(&user, 3, 50, &tok).unwrap(), (Vec::new(), 3));
    }

    #[test]
    fn a_trajectory_too_short_for_its_turns_is_skipped() {
        let live = Live {
            candidates: Vec::new(),
            tokenizer: qwen3(),
            first_turn_length: IntOrRange { min: 4, max: 4 },
            subsequent_turn_length: IntOrRange { min: 4, max: 4 },
            turns: (1, 1),
        };
        let user = boxed(&["one two three four five six", "seven eight"]);
        let built = live.build(&user, 4, 4, 2).unwrap().unwrap();
        assert_eq!(built.turns.len(), 2);
        assert_eq!(built.turns[1], ["seven eight"]);
        assert!(built.prompt_tokens[1] > built.prompt_tokens[0]);
        assert!(
            live.build(&user, 4, 4, 3).unwrap().is_none(),
            "out of messages"
        );
        assert!(
            live.build(&user, 0, 4, 1).unwrap().is_none(),
            "an empty turn"
        );
    }

    #[test]
    fn runs_are_seeded_and_rotated_by_the_dataset_offset() {
        let candidates = (0..6)
            .map(|i| boxed(&[&format!("issue number {i} in the repo"), "the tests pass"]))
            .collect();
        let live = Live {
            candidates,
            tokenizer: qwen3(),
            first_turn_length: IntOrRange { min: 50, max: 50 },
            subsequent_turn_length: IntOrRange { min: 50, max: 50 },
            turns: (1, 1),
        };
        let firsts = |total, offset, seed| -> Vec<Value> {
            live.for_run(total, offset, seed)
                .unwrap()
                .into_iter()
                .map(|c| c[0].messages[0]["content"].clone())
                .collect()
        };
        assert_eq!(firsts(4, 0, 9), firsts(4, 0, 9));
        assert_ne!(
            firsts(6, 0, 9),
            firsts(6, 0, 10),
            "another seed, another order"
        );
        assert_eq!(firsts(3, 2, 9), firsts(5, 0, 9)[2..], "c[offset:] first");
        assert_eq!(firsts(6, 2, 9)[4..], firsts(2, 0, 9), "then c[:offset]");
        assert_eq!(
            firsts(6, 6, 9),
            firsts(6, 0, 9),
            "an offset past the end: no rotation"
        );
        assert_eq!(firsts(0, 0, 9).len(), 1, "at least one conversation");
    }

    #[test]
    fn the_pre_filter_uses_the_upper_bounds() {
        let r = |min, max| IntOrRange { min, max };
        assert_eq!(
            min_chars(r(4096, 8192), r(512, 1024), 8, 3.0),
            (8192 + 1024 * 7) * 3
        );
        assert_eq!(min_chars(r(10, 10), r(5, 5), 1, 2.5), 25);
        assert!(char_count_below("ééé", 4));
        assert!(!char_count_below("ééé", 3));
        assert!(char_count_below("ab", 3));
    }
}
