//! Production traces replayed on the open-loop schedule: `mooncake_trace` (Mooncake JSONL: `timestamp` in
//! ms, `input_length`, `output_length`, `hash_ids`), `burstgpt_trace` (BurstGPT CSV) and `azure_trace`
//! (Azure LLM inference CSV). These traces carry lengths, not text: each request's prompt is synthesized
//! to its recorded input length (`dataset::replay_prompt`), with equal Mooncake hash ids giving equal
//! blocks of tokens, and the requests go through the same replay path as `workload_trace` (recorded
//! offsets on the absolute schedule).
//!
//! The file is read and every line checked while the plan is built ([`load`]: a bad line is a usage error
//! naming the file and the line); the prompts are built once the tokenizer is loaded
//! (`dataset::replay_prompt::build`).
//!
//! `--dataset-args`: `speed` (> 0, default 1: offsets are divided by it), `match_output_length` (`max_tokens`
//! = the recorded output length and `ignore_eos: true`), and for Mooncake `block_size` (tokens per hash id,
//! default 512).

pub mod csv_trace;
pub mod mooncake;

use std::path::Path;

use serde_json::{Map, Value};

use crate::traces::error::TraceError;

/// The trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Mooncake JSONL.
    Mooncake,
    /// BurstGPT CSV.
    BurstGpt,
    /// Azure LLM inference CSV.
    Azure,
}

impl Format {
    /// The `--dataset` name.
    pub fn dataset(self) -> &'static str {
        match self {
            Format::Mooncake => "mooncake_trace",
            Format::BurstGpt => "burstgpt_trace",
            Format::Azure => "azure_trace",
        }
    }
}

/// Mooncake's block size: tokens per hash id.
pub const DEFAULT_BLOCK_SIZE: u64 = 512;

/// `--dataset-args` of the replayed formats.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayArgs {
    /// Offsets are divided by it.
    pub speed: f64,
    /// `max_tokens` from the recorded output length, with `ignore_eos`.
    pub match_output_length: bool,
    /// Tokens per hash id (Mooncake).
    pub block_size: u64,
}

/// One block of a prompt: shared by every request naming the same hash id, or the request's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKey {
    /// A trace hash id.
    Shared(u64),
    /// Block `1` of request `0` (no hash id: content no other request has).
    Own(u64, u64),
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRecord {
    /// Seconds after the first request, speed applied.
    pub offset_s: f64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens (0: not recorded).
    pub output_tokens: u64,
    /// Hash ids of the prompt's leading blocks (empty for the CSV formats).
    pub hash_ids: Vec<u64>,
}

/// A loaded trace, in replay order.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayTrace {
    /// The format.
    pub format: Format,
    /// The arguments.
    pub args: ReplayArgs,
    /// The requests, by offset.
    pub records: Vec<ReplayRecord>,
}

impl ReplayRecord {
    /// The prompt's blocks and their token counts; request `index`'s own blocks follow its hash ids.
    pub fn blocks(&self, index: u64, block_size: u64) -> Vec<(BlockKey, u64)> {
        let n = self.input_tokens.div_ceil(block_size);
        (0..n)
            .map(|b| {
                let len = (self.input_tokens - b * block_size).min(block_size);
                let key = match self.hash_ids.get(b as usize) {
                    Some(&h) => BlockKey::Shared(h),
                    None => BlockKey::Own(index, b),
                };
                (key, len)
            })
            .collect()
    }
}

impl ReplayTrace {
    /// Prompt tokens of each request that an earlier request already sent as the same leading blocks: what
    /// a perfect prefix cache would serve (the leading run of hash ids seen before, each up to the tokens
    /// of it sent before; at most all but one token, as an engine computes the last).
    pub fn implied_cached_tokens(&self) -> Vec<u64> {
        let mut sent = std::collections::HashMap::<u64, u64>::new();
        self.records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let blocks = r.blocks(i as u64, self.args.block_size);
                let mut cached = 0;
                for (key, len) in &blocks {
                    let BlockKey::Shared(h) = key else { break };
                    let before = sent.get(h).copied().unwrap_or(0);
                    cached += before.min(*len);
                    if before < *len {
                        break;
                    }
                }
                for (key, len) in blocks {
                    if let BlockKey::Shared(h) = key {
                        let e = sent.entry(h).or_insert(0);
                        *e = (*e).max(len);
                    }
                }
                cached.min(r.input_tokens.saturating_sub(1))
            })
            .collect()
    }
}

/// Parses `--dataset-args` for `format`; the error names the key.
pub fn parse_args(
    format: Format,
    map: Option<&Map<String, Value>>,
) -> Result<ReplayArgs, TraceError> {
    let mut args = ReplayArgs {
        speed: 1.0,
        match_output_length: false,
        block_size: DEFAULT_BLOCK_SIZE,
    };
    for (key, value) in map.into_iter().flatten() {
        match key.as_str() {
            "speed" => match value.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => args.speed = s,
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args speed {value}: speed must be > 0"))),
            },
            "match_output_length" => match value {
                Value::Bool(b) => args.match_output_length = *b,
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args match_output_length {value}: must be true or false"))),
            },
            "block_size" if format == Format::Mooncake => match value.as_u64() {
                Some(n) if n >= 1 => args.block_size = n,
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args block_size {value}: must be an integer ≥ 1 (tokens per hash id)"))),
            },
            other => {
                let known = if format == Format::Mooncake {
                    "speed, match_output_length, block_size"
                } else {
                    "speed, match_output_length"
                };
                return Err(TraceError::DatasetArg(format!(
                    "--dataset-args: unknown key {other:?} for {}; known keys: {known}",
                    format.dataset()
                )));
            }
        }
    }
    Ok(args)
}

/// One parsed line: `(timestamp in seconds, record without its offset)`.
pub(crate) type Parsed = (f64, ReplayRecord);

/// Reads and validates the trace at `path`: every bad line is named (with the file) before anything runs.
pub fn load(format: Format, path: &Path, args: ReplayArgs) -> Result<ReplayTrace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|reason| TraceError::Unreadable {
        path: path.to_path_buf(),
        reason,
    })?;
    let (mut parsed, errors, skipped) = match format {
        Format::Mooncake => mooncake::parse(&text, args.block_size),
        Format::BurstGpt | Format::Azure => csv_trace::parse(format, &text),
    };
    if !errors.is_empty() {
        return Err(TraceError::Invalid {
            dataset: format.dataset(),
            path: path.to_path_buf(),
            lines: errors,
        });
    }
    if skipped > 0 {
        tracing::info!(
            "{}: skipped {skipped} failed request(s) (Response tokens 0)",
            format.dataset()
        );
    }
    if parsed.is_empty() {
        return Err(TraceError::Empty(format!(
            "{}: the trace has no requests ({})",
            format.dataset(),
            path.display()
        )));
    }
    if parsed.windows(2).any(|w| w[1].0 < w[0].0) {
        tracing::warn!(
            "{}: timestamps not monotonic, sorting by timestamp",
            format.dataset()
        );
        parsed.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let t0 = parsed[0].0;
    let records = parsed
        .into_iter()
        .map(|(ts, mut r)| {
            r.offset_s = (ts - t0) / args.speed;
            r
        })
        .collect();
    Ok(ReplayTrace {
        format,
        args,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(input: u64, ids: &[u64]) -> ReplayRecord {
        ReplayRecord {
            offset_s: 0.0,
            input_tokens: input,
            output_tokens: 1,
            hash_ids: ids.to_vec(),
        }
    }

    #[test]
    fn blocks_follow_hash_ids_and_the_last_may_be_partial() {
        let r = rec(10, &[7, 8]);
        assert_eq!(
            r.blocks(3, 4),
            vec![
                (BlockKey::Shared(7), 4),
                (BlockKey::Shared(8), 4),
                (BlockKey::Own(3, 2), 2)
            ]
        );
    }

    #[test]
    fn implied_cache_is_the_leading_run_of_known_blocks() {
        let trace = ReplayTrace {
            format: Format::Mooncake,
            args: ReplayArgs {
                speed: 1.0,
                match_output_length: false,
                block_size: 4,
            },
            records: vec![
                rec(8, &[0, 1]),
                rec(12, &[0, 1, 2]),
                rec(12, &[0, 3, 2]),
                rec(8, &[0, 1]),
                rec(10, &[5, 6, 7]),
                rec(12, &[5, 6, 7]),
            ],
        };
        // 0; blocks 0,1 known; only block 0 leads (3 is new); all known but the last token is computed;
        // new; block 7 was sent only 2 tokens long before.
        assert_eq!(trace.implied_cached_tokens(), vec![0, 8, 4, 7, 0, 10]);
    }

    #[test]
    fn args_are_checked_by_key() {
        let m: Map<String, Value> =
            serde_json::from_str(r#"{"speed": 2, "block_size": 16, "match_output_length": true}"#)
                .unwrap();
        let a = parse_args(Format::Mooncake, Some(&m)).unwrap();
        assert_eq!(
            (a.speed, a.block_size, a.match_output_length),
            (2.0, 16, true)
        );
        let e = parse_args(Format::BurstGpt, Some(&m))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"block_size\"") && e.contains("burstgpt_trace"),
            "{e}"
        );
        let bad: Map<String, Value> = serde_json::from_str(r#"{"speed": 0}"#).unwrap();
        assert!(parse_args(Format::Azure, Some(&bad))
            .unwrap_err()
            .to_string()
            .contains("speed"));
    }
}
