//! What the statistics need of one request ([`Sample`], plain numbers, so a `RequestRecord` and a stored
//! the run's database row feed the same code), and the per-success percentile columns
//! ([`SuccessRows`], exact and in bounded memory).

use std::path::PathBuf;
use std::sync::Arc;

use super::percentile::{columns, percentile_column, PercentileTable};
use super::spill::SortedSpill;

/// One measured request, reduced to the numbers the summary and percentiles use (seconds, tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    /// `start_time`, monotonic seconds.
    pub start_time: f64,
    /// `completed_time`, monotonic seconds.
    pub completed_time: f64,
    /// The request succeeded (only successes reach the averages and percentiles).
    pub success: bool,
    /// The response was a stream.
    pub is_stream: bool,
    /// `latency`, seconds (successes only).
    pub latency: f64,
    /// `first_chunk_latency` (TTFT), seconds (successes only).
    pub ttft: f64,
    /// `time_per_output_token`, seconds (successes only).
    pub tpot: f64,
    /// `prompt_tokens`.
    pub prompt_tokens: u64,
    /// `completion_tokens`.
    pub completion_tokens: u64,
    /// Server-reported `cached_tokens`, when present.
    pub cached_tokens: Option<u64>,
    /// Output-bearing chunks (`n_decode_chunks`), for the speculative-decoding estimate.
    pub n_decode_chunks: u32,
    /// Failure kind label (failures only).
    pub failure: Option<&'static str>,
    /// Multi-turn: `(turns in the context, from 1; first turn of its conversation)`.
    pub turn: Option<(u32, bool)>,
}

/// The percentile columns of the successful requests, each an exact [`SortedSpill`] (bounded memory).
///
/// evalscope's `streaming_rows` columns (TTFT, TPOT, Decode) use the stream rows when the run has any,
/// else every row; which applies is known only at the end, so each is kept twice: over the stream rows
/// and over the non-stream rows.
#[derive(Debug)]
pub(crate) struct SuccessRows {
    input_only: bool,
    latency: SortedSpill,
    prompt: SortedSpill,
    /// Input-only runs: `Input (tok/s)`; LLM runs: `Output (tok/s)`.
    rate: SortedSpill,
    total_rate: SortedSpill,
    completion: SortedSpill,
    ttft: [SortedSpill; 2],
    tpot: [SortedSpill; 2],
    decode: [SortedSpill; 2],
    itl: SortedSpill,
    n_stream: u64,
}

/// A token count as the percentile table holds it (saturating at `u32::MAX`, as before).
fn compact(tokens: u64) -> u32 {
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// `tokens / latency`, NaN when the latency is not positive.
fn per_second(tokens: f64, latency: f64) -> f64 {
    if latency > 0.0 {
        tokens / latency
    } else {
        f64::NAN
    }
}

impl SuccessRows {
    /// Empty columns holding at most `cap` values each in memory, spilling to `dir`.
    pub fn new(input_only: bool, cap: usize, dir: Option<Arc<PathBuf>>) -> SuccessRows {
        let col = || SortedSpill::new(cap, dir.clone());
        SuccessRows {
            input_only,
            latency: col(),
            prompt: col(),
            rate: col(),
            total_rate: col(),
            completion: col(),
            ttft: [col(), col()],
            tpot: [col(), col()],
            decode: [col(), col()],
            itl: col(),
            n_stream: 0,
        }
    }

    /// Keeps a successful request's values.
    pub fn push(&mut self, s: &Sample) {
        let prompt = f64::from(compact(s.prompt_tokens));
        let completion = f64::from(compact(s.completion_tokens));
        self.latency.push(s.latency);
        self.prompt.push(prompt);
        if self.input_only {
            self.rate.push(per_second(prompt, s.latency));
            return;
        }
        let tokens = u64::from(compact(s.prompt_tokens)) + u64::from(compact(s.completion_tokens));
        self.completion.push(completion);
        self.rate.push(per_second(completion, s.latency));
        self.total_rate.push(per_second(tokens as f64, s.latency));
        // 0: stream rows, 1: non-stream rows.
        let k = usize::from(!s.is_stream);
        self.n_stream += u64::from(s.is_stream);
        self.ttft[k].push(s.ttft * 1000.0);
        // A stream row without a positive TPOT has none; a non-stream row counts only when the run has no
        // stream row at all, and then evalscope keeps its TPOT as it is.
        let tpot_ms = if s.tpot > 0.0 || !s.is_stream {
            s.tpot * 1000.0
        } else {
            f64::NAN
        };
        self.tpot[k].push(tpot_ms);
        self.decode[k].push(if s.tpot > 0.0 { 1.0 / s.tpot } else { f64::NAN });
    }

    /// Keeps one inter-token latency sample, seconds.
    pub fn push_itl(&mut self, itl_s: f64) {
        self.itl.push(itl_s * 1000.0);
    }

    /// Bytes the columns have written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        [
            &self.latency,
            &self.prompt,
            &self.rate,
            &self.total_rate,
            &self.completion,
            &self.itl,
        ]
        .into_iter()
        .chain(&self.ttft)
        .chain(&self.tpot)
        .chain(&self.decode)
        .map(SortedSpill::disk_bytes)
        .sum()
    }

    /// The percentile table (spec §4.2): LLM columns, or `Latency (s)`, `Input tokens`, `Input (tok/s)`
    /// for input-only (embedding / rerank) runs.
    pub fn table(&self) -> PercentileTable {
        let mut columns: Vec<(&str, &SortedSpill)> = Vec::with_capacity(9);
        columns.push((columns::LATENCY_S, &self.latency));
        if self.input_only {
            columns.push((columns::INPUT_TOKENS, &self.prompt));
            columns.push((columns::INPUT_TPS, &self.rate));
        } else {
            let k = usize::from(self.n_stream == 0);
            columns.push((columns::TTFT_MS, &self.ttft[k]));
            columns.push((columns::ITL_MS, &self.itl));
            columns.push((columns::TPOT_MS, &self.tpot[k]));
            columns.push((columns::INPUT_TOKENS, &self.prompt));
            columns.push((columns::OUTPUT_TOKENS, &self.completion));
            columns.push((columns::OUTPUT_TPS, &self.rate));
            columns.push((columns::TOTAL_TPS, &self.total_rate));
            columns.push((columns::DECODE_TPS, &self.decode[k]));
        }
        PercentileTable {
            columns: columns
                .into_iter()
                .map(|(key, col)| (key.to_string(), percentile_column(col)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(is_stream: bool, latency: f64, ttft: f64, tpot: f64, completion: u64) -> Sample {
        Sample {
            success: true,
            is_stream,
            latency,
            ttft,
            tpot,
            prompt_tokens: 10,
            completion_tokens: completion,
            ..Default::default()
        }
    }

    #[test]
    fn stream_columns_ignore_non_stream_rows_and_zero_tpot() {
        let mut rows = SuccessRows::new(false, 2, None);
        rows.push(&ok(true, 1.0, 0.2, 0.01, 81));
        rows.push(&ok(true, 1.0, 0.4, 0.0, 1)); // one token: no TPOT, no decode rate
        rows.push(&ok(false, 2.0, 2.0, 0.0, 50));
        let t = rows.table();
        let ttft = t.column("TTFT (ms)").unwrap();
        assert_eq!((ttft[0], ttft[10]), (200.0, 400.0));
        assert_eq!(t.column("TPOT (ms)").unwrap(), &[10.0; 11]);
        assert_eq!(t.column("Decode (tok/s)").unwrap(), &[100.0; 11]);
        let lat = t.column("Latency (s)").unwrap();
        assert_eq!((lat[0], lat[10]), (1.0, 2.0));
        let out = t.column("Output (tok/s)").unwrap();
        assert_eq!((out[0], out[10]), (1.0, 81.0));
        assert!(t.column("ITL (ms)").unwrap().iter().all(|v| v.is_nan()));
    }

    #[test]
    fn non_stream_only_falls_back_to_all_rows() {
        let mut rows = SuccessRows::new(false, 2, None);
        rows.push(&ok(false, 1.5, 1.5, 0.0, 51));
        let t = rows.table();
        assert_eq!(t.column("TTFT (ms)").unwrap(), &[1500.0; 11]);
        assert_eq!(t.column("TPOT (ms)").unwrap(), &[0.0; 11]);
        assert!(t.column("Decode (tok/s)").unwrap()[5].is_nan());
    }

    #[test]
    fn zero_latency_rate_is_nan_and_dropped() {
        let mut rows = SuccessRows::new(true, 2, None);
        rows.push(&ok(false, 0.0, 0.0, 0.0, 5));
        rows.push(&ok(false, 0.5, 0.5, 0.0, 5));
        let t = rows.table();
        let keys: Vec<&str> = t.columns.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["Latency (s)", "Input tokens", "Input (tok/s)"]);
        assert_eq!(t.column("Input (tok/s)").unwrap(), &[20.0; 11]);
    }
}
