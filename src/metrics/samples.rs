//! What the statistics need of one request ([`Sample`], plain numbers, so a `RequestRecord` and a stored
//! `benchmark_data.db` row feed the same code), and the compact per-success columns kept for the percentile
//! table ([`SuccessRows`]).

use super::percentile::{percentile_column, PercentileTable};

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

/// Per-success values, one entry per successful request in arrival order, plus every ITL sample pooled.
#[derive(Debug, Clone, Default)]
pub(crate) struct SuccessRows {
    latency: Vec<f64>,
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    prompt: Vec<u32>,
    completion: Vec<u32>,
    stream: Vec<bool>,
    n_stream: usize,
    /// Every inter-token latency sample, seconds.
    pub itl: Vec<f64>,
}

fn compact(tokens: u64) -> u32 {
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

impl SuccessRows {
    /// Keeps a successful request's values (its ITL samples are appended to [`SuccessRows::itl`] by the
    /// caller).
    pub fn push(&mut self, s: &Sample) {
        self.latency.push(s.latency);
        self.ttft.push(s.ttft);
        self.tpot.push(s.tpot);
        self.prompt.push(compact(s.prompt_tokens));
        self.completion.push(compact(s.completion_tokens));
        self.stream.push(s.is_stream);
        self.n_stream += usize::from(s.is_stream);
    }

    /// Values of `f(row)` over the stream rows, or over every row when there is no stream row
    /// (evalscope's `streaming_rows`).
    fn streaming<F: Fn(usize) -> f64>(&self, f: F) -> Vec<f64> {
        let any_stream = self.n_stream > 0;
        (0..self.latency.len())
            .filter(|&i| !any_stream || self.stream[i])
            .map(f)
            .collect()
    }

    /// Values of `f(row)` over every row.
    fn all<F: Fn(usize) -> f64>(&self, f: F) -> Vec<f64> {
        (0..self.latency.len()).map(f).collect()
    }

    /// `tokens / latency`, NaN when the latency is not positive.
    fn per_second(&self, tokens: f64, i: usize) -> f64 {
        let latency = self.latency[i];
        if latency > 0.0 {
            tokens / latency
        } else {
            f64::NAN
        }
    }

    /// The percentile table (spec §4.2): LLM columns, or `Latency (s)`, `Input tokens`, `Input (tok/s)`
    /// for input-only (embedding / rerank) runs.
    pub fn table(&self, input_only: bool) -> PercentileTable {
        let latency = self.all(|i| self.latency[i]);
        let prompt = self.all(|i| f64::from(self.prompt[i]));
        let mut columns: Vec<(&str, Vec<f64>)> = Vec::with_capacity(9);
        if input_only {
            let input_tps = self.all(|i| self.per_second(f64::from(self.prompt[i]), i));
            columns.push(("Latency (s)", latency));
            columns.push(("Input tokens", prompt));
            columns.push(("Input (tok/s)", input_tps));
        } else {
            let any_stream = self.n_stream > 0;
            let tpot_ms = self.streaming(|i| {
                let tpot = self.tpot[i];
                if tpot > 0.0 || !any_stream {
                    tpot * 1000.0
                } else {
                    f64::NAN
                }
            });
            let decode = self.streaming(|i| {
                let tpot = self.tpot[i];
                if tpot > 0.0 {
                    1.0 / tpot
                } else {
                    f64::NAN
                }
            });
            columns.push(("Latency (s)", latency));
            columns.push(("TTFT (ms)", self.streaming(|i| self.ttft[i] * 1000.0)));
            columns.push(("ITL (ms)", self.itl.iter().map(|v| v * 1000.0).collect()));
            columns.push(("TPOT (ms)", tpot_ms));
            columns.push(("Input tokens", prompt));
            columns.push(("Output tokens", self.all(|i| f64::from(self.completion[i]))));
            columns.push((
                "Output (tok/s)",
                self.all(|i| self.per_second(f64::from(self.completion[i]), i)),
            ));
            columns.push((
                "Total (tok/s)",
                self.all(|i| {
                    let tokens = u64::from(self.prompt[i]) + u64::from(self.completion[i]);
                    self.per_second(tokens as f64, i)
                }),
            ));
            columns.push(("Decode (tok/s)", decode));
        }
        PercentileTable {
            columns: columns
                .into_iter()
                .map(|(key, values)| (key.to_string(), percentile_column(values)))
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
        let mut rows = SuccessRows::default();
        rows.push(&ok(true, 1.0, 0.2, 0.01, 81));
        rows.push(&ok(true, 1.0, 0.4, 0.0, 1)); // one token: no TPOT, no decode rate
        rows.push(&ok(false, 2.0, 2.0, 0.0, 50));
        let t = rows.table(false);
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
        let mut rows = SuccessRows::default();
        rows.push(&ok(false, 1.5, 1.5, 0.0, 51));
        let t = rows.table(false);
        assert_eq!(t.column("TTFT (ms)").unwrap(), &[1500.0; 11]);
        assert_eq!(t.column("TPOT (ms)").unwrap(), &[0.0; 11]);
        assert!(t.column("Decode (tok/s)").unwrap()[5].is_nan());
    }

    #[test]
    fn zero_latency_rate_is_nan_and_dropped() {
        let mut rows = SuccessRows::default();
        rows.push(&ok(false, 0.0, 0.0, 0.0, 5));
        rows.push(&ok(false, 0.5, 0.5, 0.0, 5));
        let t = rows.table(true);
        let keys: Vec<&str> = t.columns.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["Latency (s)", "Input tokens", "Input (tok/s)"]);
        assert_eq!(t.column("Input (tok/s)").unwrap(), &[20.0; 11]);
    }
}
