//! Multi-turn mode, validated: `--multi-turn` with its turn bounds, the multi-turn datasets'
//! `--dataset-args` schema (the deprecated `--multi-turn-args` already folded in by `legacy_args`),
//! llmperf's think time between turns and `--session-header`.

use serde_json::{Map, Value};

use super::{usage, DatasetKind, LoadMode, PromptSource, UsageError};
use crate::cli::Cli;

/// Pause before each later turn of a conversation (`--dataset-args '{"think_time_s": …}'`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    /// Always this many seconds.
    Fixed(f64),
    /// Uniform between the two bounds, seconds.
    Uniform(f64, f64),
    /// Exponential with this mean, seconds (a Poisson user).
    Exponential(f64),
}

impl ThinkTime {
    /// One pause, in seconds.
    pub fn draw(self, rng: &mut impl rand::Rng) -> f64 {
        match self {
            ThinkTime::Fixed(s) => s,
            ThinkTime::Uniform(a, b) if b > a => rng.random_range(a..b),
            ThinkTime::Uniform(a, _) => a,
            ThinkTime::Exponential(mean) => {
                let u: f64 = rng.random_range(f64::EPSILON..1.0);
                -mean * u.ln()
            }
        }
    }
}

/// An integer or a `[min, max]` range drawn uniformly (evalscope's `IntOrRange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntOrRange {
    /// Lower bound (equal to `max` for a single value).
    pub min: u64,
    /// Upper bound, inclusive.
    pub max: u64,
}

/// The multi-turn datasets' `--dataset-args` (evalscope's `MultiTurnDatasetArgs`, plus `think_time_s`).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiTurnArgs {
    /// `first_turn_length`: target tokens of a generated first turn (`swe_smith`), default 65000.
    pub first_turn_length: IntOrRange,
    /// `subsequent_turn_length`: target tokens added per later turn, default 500.
    pub subsequent_turn_length: IntOrRange,
    /// `chars_per_token`: characters per token assumed without a tokenizer, default 3.0.
    pub chars_per_token: f64,
    /// `think_time_s`: pause before each later turn (llmperf's addition).
    pub think_time: Option<ThinkTime>,
}

impl Default for MultiTurnArgs {
    fn default() -> Self {
        MultiTurnArgs {
            first_turn_length: IntOrRange {
                min: 65000,
                max: 65000,
            },
            subsequent_turn_length: IntOrRange { min: 500, max: 500 },
            chars_per_token: 3.0,
            think_time: None,
        }
    }
}

/// `--multi-turn` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiTurnSettings {
    /// Fewest user turns per conversation (at least 1).
    pub min_turns: u64,
    /// Most user turns per conversation; later turns are not sent.
    pub max_turns: Option<u64>,
    /// `--dataset-args`, validated against the multi-turn schema.
    pub args: MultiTurnArgs,
    /// `--session-header`: header name carrying one stable id per conversation.
    pub session_header: Option<String>,
    /// The deprecated `--multi-turn-args` as evalscope writes it into the run's arguments file (its defaults
    /// overlaid with the keys given), when given.
    pub legacy_args: Option<Map<String, Value>>,
}

/// Validates the multi-turn flags against the rest of the plan. `None` when `--multi-turn` is off (after
/// checking that no multi-turn-only flag or dataset was given without it).
pub(super) fn multi_turn_settings(
    cli: &Cli,
    mode: LoadMode,
    prompts: &PromptSource,
) -> Result<Option<MultiTurnSettings>, UsageError> {
    let flags = &cli.turns;
    let kind = match prompts {
        PromptSource::Dataset { kind, .. } => Some(*kind),
        PromptSource::Fixed(_) => None,
    };
    let multi_dataset = kind.is_some_and(DatasetKind::is_multi_turn);
    if !flags.multi_turn {
        if multi_dataset {
            return usage(format!(
                "--dataset {} yields whole conversations: add --multi-turn (--number then counts conversations, --parallel the conversations in flight)",
                cli.dataset.as_str()
            ));
        }
        // Only its `num_workers` means something outside --multi-turn (promoted to --num-workers).
        let multi_turn_keys = flags.multi_turn_args.as_deref().is_some_and(|text| {
            serde_json::from_str::<Map<String, Value>>(text)
                .map_or(true, |m| m.keys().any(|k| k != "num_workers"))
        });
        if multi_turn_keys {
            return usage("--multi-turn-args applies to --multi-turn runs only: add --multi-turn, or drop --multi-turn-args");
        }
        if flags.session_header.is_some() {
            return usage("--session-header gives each conversation one id: it needs --multi-turn");
        }
        if flags.max_turns.is_some() || flags.min_turns != 1 {
            return usage(
                "--min-turns / --max-turns apply to --multi-turn runs only: add --multi-turn",
            );
        }
        return Ok(None);
    }
    if mode == LoadMode::Open {
        return usage(
            "--multi-turn is not supported in open-loop mode: turn N cannot be dispatched before the response of turn N-1 has been appended to the conversation context, which contradicts open-loop scheduling (dispatch independent of in-flight requests).",
        );
    }
    let Some(kind) = kind else {
        return usage("--multi-turn needs a multi-turn dataset (e.g. --dataset random_multi_turn), not --prompt");
    };
    if !kind.is_multi_turn() {
        return usage(format!(
            "--multi-turn needs a multi-turn dataset, not --dataset {}: use random_multi_turn, share_gpt_zh_multi_turn, share_gpt_en_multi_turn, custom_multi_turn, swe_smith, trie_agentic_coding, trie_code_qa or trie_office_work",
            cli.dataset.as_str()
        ));
    }
    if cli.sharding.shard.is_some() || cli.sharding.shard_count.is_some() {
        return usage("--shard / --shard-count are not supported with --multi-turn: conversations are not split across machines; run one process per machine with its own --number");
    }
    if cli.tokenize_prompt {
        return usage("--tokenize-prompt is not supported with --multi-turn: conversations are sent as messages to the chat/completions endpoint");
    }
    if flags.min_turns < 0 {
        return usage(format!(
            "--min-turns {}: must be at least 1",
            flags.min_turns
        ));
    }
    // evalscope: max(1, min_turns).
    let min_turns = flags.min_turns.max(1) as u64;
    let max_turns = match flags.max_turns {
        None => None,
        Some(m) if m < 1 => return usage(format!("--max-turns {m}: must be at least 1")),
        Some(m) if (m as u64) < min_turns => {
            return usage(format!(
                "--max-turns ({m}) must be >= --min-turns ({min_turns})."
            ))
        }
        Some(m) => Some(m as u64),
    };
    if kind == DatasetKind::RandomMultiTurn && max_turns.is_none() {
        return usage("random_multi_turn requires --max-turns to be set. Please specify the maximum number of turns per conversation.");
    }
    // `--multi-turn-args` is already folded in (`legacy_args`).
    let args = parse_args(&cli.dataset_args.clone().unwrap_or_default())?;
    let session_header = match &flags.session_header {
        None => None,
        Some(name) if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok() => {
            Some(name.clone())
        }
        Some(name) => {
            return usage(format!(
                "--session-header {name:?}: not a valid HTTP header name (letters, digits and -_.!#$%&'*+^`|~ only, e.g. X-Session-Id)"
            ))
        }
    };
    let legacy_args = legacy_dump(cli);
    Ok(Some(MultiTurnSettings {
        min_turns,
        max_turns,
        args,
        session_header,
        legacy_args,
    }))
}

/// evalscope's `MultiTurnArgs.model_dump()` of a (valid) `--multi-turn-args`.
fn legacy_dump(cli: &Cli) -> Option<Map<String, Value>> {
    let given: Map<String, Value> =
        serde_json::from_str(cli.turns.multi_turn_args.as_ref()?).ok()?;
    let mut out = Map::new();
    for (key, default) in [
        ("first_turn_length", serde_json::json!(65000)),
        ("subsequent_turn_length", serde_json::json!(500)),
        ("chars_per_token", serde_json::json!(3.0)),
        ("num_workers", serde_json::json!(4)),
    ] {
        out.insert(key.into(), given.get(key).cloned().unwrap_or(default));
    }
    Some(out)
}

fn int_or_range(key: &str, v: &Value) -> Result<IntOrRange, UsageError> {
    let bad = || {
        usage(format!(
            "--dataset-args {key} {v}: must be an integer ≥ 0 or a [min, max] list"
        ))
    };
    match v {
        Value::Number(_) => match v.as_u64() {
            Some(n) => Ok(IntOrRange { min: n, max: n }),
            None => bad(),
        },
        Value::Array(items) if items.len() == 2 => match (items[0].as_u64(), items[1].as_u64()) {
            (Some(a), Some(b)) if a <= b => Ok(IntOrRange { min: a, max: b }),
            (Some(_), Some(_)) => usage(format!(
                "--dataset-args {key} {v}: IntOrRange list min must be <= max"
            )),
            _ => bad(),
        },
        _ => bad(),
    }
}

fn seconds(key: &str, v: &Value) -> Result<f64, UsageError> {
    match v.as_f64() {
        Some(s) if s >= 0.0 && s.is_finite() => Ok(s),
        _ => usage(format!(
            "--dataset-args {key} {v}: must be a number of seconds ≥ 0"
        )),
    }
}

fn think_time(v: &Value) -> Result<ThinkTime, UsageError> {
    const KEY: &str = "think_time_s";
    match v {
        Value::Number(_) => Ok(ThinkTime::Fixed(seconds(KEY, v)?)),
        Value::Array(items) if items.len() == 2 => {
            let (a, b) = (seconds(KEY, &items[0])?, seconds(KEY, &items[1])?);
            if a > b {
                return usage(format!(
                    "--dataset-args think_time_s {v}: the minimum must not exceed the maximum"
                ));
            }
            Ok(ThinkTime::Uniform(a, b))
        }
        Value::Object(m) if m.len() == 1 && m.contains_key("exponential_mean") => Ok(
            ThinkTime::Exponential(seconds(KEY, &m["exponential_mean"])?),
        ),
        _ => usage(format!(
            "--dataset-args think_time_s {v}: use seconds (2.5), a uniform range ([1, 4]) or {{\"exponential_mean\": 2.5}}"
        )),
    }
}

/// Validates the multi-turn datasets' `--dataset-args` (unknown keys rejected, as evalscope's
/// `extra='forbid'`).
fn parse_args(map: &Map<String, Value>) -> Result<MultiTurnArgs, UsageError> {
    let mut args = MultiTurnArgs::default();
    for (key, value) in map {
        match key.as_str() {
            "first_turn_length" => args.first_turn_length = int_or_range(key, value)?,
            "subsequent_turn_length" => args.subsequent_turn_length = int_or_range(key, value)?,
            "chars_per_token" => match value.as_f64() {
                Some(c) if c > 0.0 && c.is_finite() => args.chars_per_token = c,
                _ => return usage(format!("--dataset-args chars_per_token {value}: must be a number > 0")),
            },
            "think_time_s" => args.think_time = Some(think_time(value)?),
            other => {
                return usage(format!(
                    "--dataset-args: unknown key {other:?} for a multi-turn dataset; known keys: first_turn_length, subsequent_turn_length, chars_per_token, think_time_s"
                ))
            }
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    #[test]
    fn think_time_forms() {
        assert_eq!(think_time(&json!(2)).unwrap(), ThinkTime::Fixed(2.0));
        assert_eq!(
            think_time(&json!([1, 3.5])).unwrap(),
            ThinkTime::Uniform(1.0, 3.5)
        );
        assert_eq!(
            think_time(&json!({"exponential_mean": 0.5})).unwrap(),
            ThinkTime::Exponential(0.5)
        );
        assert!(think_time(&json!([3, 1])).is_err());
        assert!(think_time(&json!(-1)).is_err());
        assert!(think_time(&json!("x")).is_err());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let draws: Vec<f64> = (0..2000)
            .map(|_| ThinkTime::Exponential(0.5).draw(&mut rng))
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "mean {mean}");
        assert!((0..100).all(|_| {
            let d = ThinkTime::Uniform(1.0, 2.0).draw(&mut rng);
            (1.0..2.0).contains(&d)
        }));
    }

    #[test]
    fn int_or_range_and_unknown_keys() {
        let m: Map<String, Value> =
            serde_json::from_value(json!({"first_turn_length": [10, 20]})).unwrap();
        let a = parse_args(&m).unwrap();
        assert_eq!(a.first_turn_length, IntOrRange { min: 10, max: 20 });
        let m: Map<String, Value> = serde_json::from_value(json!({"target_input_len": 5})).unwrap();
        let e = parse_args(&m).unwrap_err().0;
        assert!(e.contains("target_input_len"), "{e}");
        let m: Map<String, Value> =
            serde_json::from_value(json!({"subsequent_turn_length": [5, 1]})).unwrap();
        assert!(parse_args(&m).is_err());
    }
}
