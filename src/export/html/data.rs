//! The per-request data of one run for `perf_report.html`, read back from the run's database
//! after the run (one streaming pass; memory stays flat however many requests the run had).
//!
//! Kept: TTFT and ITL histograms over every successful request (bins from the run's exact percentile
//! table: 30 equal bins from the minimum to the 99th percentile, plus one bar for everything above), a
//! request timeline sampled to about [`MAX_SPANS`] requests (every k-th request, plus up to 25 failed ones
//! the stride missed), and output tokens per second over time (each reply's tokens spread evenly from
//! its first token to its end). Percentiles are never sampled: they come from the run's table.

use std::path::Path;

use anyhow::{Context, Result};

use super::svg::Bins;
use super::timeline::Span;
use crate::metrics::{columns, PercentileTable, PERCENTILE_LABELS};

/// The most requests drawn on one run's timeline.
pub const MAX_SPANS: usize = 500;
/// Histogram bins up to the 99th percentile.
const N_BINS: usize = 30;

/// What the report draws for one run besides its summary and percentiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    /// TTFT, milliseconds.
    pub ttft: Bins,
    /// Inter-token latency, milliseconds.
    pub itl: Bins,
    /// Sampled requests, ordered by start.
    pub spans: Vec<Span>,
    /// Stored requests (the timeline's population).
    pub n_requests: u64,
    /// Output tokens per second over time: `(bin middle, rate)`, seconds since the run's first start.
    pub tok_rate: Vec<(f64, f64)>,
    /// `--multi-turn`: `(turn, mean TTFT ms, max TTFT ms, requests)` per turn (empty otherwise).
    pub turn_ttft: Vec<(u32, f64, f64, u64)>,
    /// Per body `model`, when there are several (empty otherwise).
    pub by_model: Vec<super::breakdown::Group>,
    /// Per endpoint (`--url-strategy`; empty otherwise).
    pub by_endpoint: Vec<super::breakdown::Group>,
}

/// `(min, p99, max)` of a percentile column, when it has values.
fn range(p: &PercentileTable, key: &str) -> Option<(f64, f64, f64)> {
    let idx = |label: &str| PERCENTILE_LABELS.iter().position(|l| *l == label);
    let (_, values) = p.columns.iter().find(|(k, _)| k == key)?;
    let (min, p99, max) = (
        values[idx("min")?],
        values[idx("99%")?],
        values[idx("max")?],
    );
    (min.is_finite() && p99.is_finite() && max.is_finite()).then_some((min, p99, max))
}

/// Equal bins over `[min, p99]`; values above go to `above`.
struct Binner {
    bins: Bins,
    width: f64,
}

impl Binner {
    fn new(range: Option<(f64, f64, f64)>) -> Option<Binner> {
        let (lo, p99, max) = range?;
        let hi = if p99 > lo {
            p99
        } else {
            lo + (lo.abs() * 0.01).max(1e-3)
        };
        Some(Binner {
            bins: Bins {
                lo,
                hi,
                counts: vec![0; N_BINS],
                above: 0,
                max,
            },
            width: (hi - lo) / N_BINS as f64,
        })
    }

    fn add(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        if v > self.bins.hi {
            self.bins.above += 1;
            self.bins.max = self.bins.max.max(v);
        } else {
            let i = ((v - self.bins.lo) / self.width).floor().max(0.0) as usize;
            self.bins.counts[i.min(N_BINS - 1)] += 1;
        }
    }
}

/// Tokens spread over equal time bins.
struct RateBins {
    width: f64,
    tokens: Vec<f64>,
}

impl RateBins {
    fn new(span_s: f64) -> RateBins {
        let n = (span_s.ceil() as usize).clamp(20, 120);
        RateBins {
            width: (span_s / n as f64).max(1e-9),
            tokens: vec![0.0; n],
        }
    }

    fn bin(&self, t: f64) -> usize {
        ((t / self.width).floor().max(0.0) as usize).min(self.tokens.len() - 1)
    }

    /// Adds `count` tokens spread evenly over `[a, b]` (all at `b` when the interval is empty).
    fn spread(&mut self, a: f64, b: f64, count: f64) {
        if count <= 0.0 {
            return;
        }
        if b <= a {
            let i = self.bin(b);
            self.tokens[i] += count;
            return;
        }
        let per_s = count / (b - a);
        for i in self.bin(a)..=self.bin(b) {
            let lo = (i as f64 * self.width).max(a);
            let hi = ((i + 1) as f64 * self.width).min(b);
            if hi > lo {
                self.tokens[i] += per_s * (hi - lo);
            }
        }
    }

    fn rates(&self) -> Vec<(f64, f64)> {
        self.tokens
            .iter()
            .enumerate()
            .map(|(i, t)| ((i as f64 + 0.5) * self.width, t / self.width))
            .collect()
    }
}

/// The `inter_token_latencies` JSON list, without building a JSON tree.
fn each_itl(text: &str, mut f: impl FnMut(f64)) {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    for part in inner.split(',') {
        if let Ok(v) = part.trim().parse::<f64>() {
            f(v);
        }
    }
}

/// Reads `db` (a run's database) once; `percentiles` is the run's table (histogram ranges).
pub fn load(db: &Path, percentiles: &PercentileTable) -> Result<RunData> {
    // Attached for scans: the per-model table's GROUP BY sorts every row, in ~2 MiB rather than 16.
    let con = crate::metrics::sql_stats::open_for_scans(db)?;
    let (n, t0, t1, n_stream_ok): (i64, Option<f64>, Option<f64>, Option<i64>) = con
        .query_row(
            "SELECT COUNT(*), MIN(start_time), MAX(completed_time), \
             SUM(success = 1 AND is_stream = 1) FROM result",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .with_context(|| format!("reading {}", db.display()))?;
    let mut data = RunData {
        n_requests: n.max(0) as u64,
        turn_ttft: super::turns::turn_ttft(&con),
        by_model: super::breakdown::by_model(&con),
        by_endpoint: super::breakdown::by_endpoint(&con),
        ..RunData::default()
    };
    let (Some(t0), Some(t1)) = (t0, t1) else {
        return Ok(data);
    };
    let stream_only = n_stream_ok.unwrap_or(0) > 0;
    let mut ttft = Binner::new(range(percentiles, columns::TTFT_MS));
    let mut itl = Binner::new(range(percentiles, columns::ITL_MS));
    let mut rate = RateBins::new((t1 - t0).max(1e-6));
    let stride = (data.n_requests as usize).div_ceil(MAX_SPANS).max(1);
    // Rare failures stay visible without crowding the sample.
    let max_extra_failures = MAX_SPANS / 20;
    let mut extra_failures = 0;

    let mut stmt = con.prepare(
        "SELECT start_time, completed_time, success, first_chunk_latency, completion_tokens, \
         inter_token_latencies, is_stream FROM result ORDER BY rowid",
    )?;
    let mut rows = stmt.query([])?;
    let mut i = 0usize;
    while let Some(row) = rows.next()? {
        let start: f64 = row.get::<_, Option<f64>>(0)?.unwrap_or(t0) - t0;
        let end: f64 = row.get::<_, Option<f64>>(1)?.unwrap_or(t0) - t0;
        let ok = row.get::<_, Option<i64>>(2)? == Some(1);
        let first_s: Option<f64> = row.get(3)?;
        let tokens: Option<i64> = row.get(4)?;
        let is_stream = row.get::<_, Option<i64>>(6)? == Some(1);
        let first = match (ok, first_s) {
            (true, Some(f)) => (start + f).min(end),
            _ => end,
        };
        if ok {
            if let (Some(b), Some(f)) = (ttft.as_mut(), first_s) {
                if is_stream || !stream_only {
                    b.add(f * 1000.0);
                }
            }
            if let Some(b) = itl.as_mut() {
                let text: Option<String> = row.get(5)?;
                each_itl(text.as_deref().unwrap_or("[]"), |v| b.add(v * 1000.0));
            }
            rate.spread(first, end, tokens.unwrap_or(0).max(0) as f64);
        }
        let sampled = i.is_multiple_of(stride);
        if sampled || (!ok && extra_failures < max_extra_failures) {
            if !sampled {
                extra_failures += 1;
            }
            data.spans.push(Span {
                start,
                first,
                end,
                ok,
            });
        }
        i += 1;
    }
    data.spans.sort_by(|a, b| a.start.total_cmp(&b.start));
    data.ttft = ttft.map(|b| b.bins).unwrap_or_default();
    data.itl = itl.map(|b| b.bins).unwrap_or_default();
    data.tok_rate = rate.rates();
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_bins_spread_tokens_over_time() {
        let mut r = RateBins::new(20.0); // 20 bins of 1 s
        r.spread(0.0, 4.0, 40.0);
        r.spread(10.5, 10.5, 7.0);
        let rates = r.rates();
        assert_eq!(rates.len(), 20);
        assert_eq!(rates[0], (0.5, 10.0));
        assert_eq!(rates[3].1, 10.0);
        assert_eq!(rates[4].1, 0.0);
        assert_eq!(rates[10].1, 7.0);
        let total: f64 = rates.iter().map(|(_, v)| v * 1.0).sum();
        assert!((total - 47.0).abs() < 1e-9);
    }

    #[test]
    fn binner_puts_the_tail_in_the_overflow_bar() {
        let mut b = Binner::new(Some((10.0, 40.0, 100.0))).unwrap();
        for v in [10.0, 10.5, 39.9, 40.0, 41.0, 100.0] {
            b.add(v);
        }
        assert_eq!(b.bins.counts[0], 2);
        assert_eq!(b.bins.counts[N_BINS - 1], 2);
        assert_eq!(b.bins.above, 2);
        assert_eq!(b.bins.total(), 6);
        // All values equal: one usable bin, nothing lost.
        let mut b = Binner::new(Some((5.0, 5.0, 5.0))).unwrap();
        b.add(5.0);
        assert_eq!(b.bins.total(), 1);
        assert!(Binner::new(None).is_none());
    }

    #[test]
    fn itl_lists_parse() {
        let mut v = Vec::new();
        each_itl("[0.5, 1e-05, 2]", |x| v.push(x));
        assert_eq!(v, vec![0.5, 1e-05, 2.0]);
        each_itl("[]", |x| v.push(x));
        assert_eq!(v.len(), 3);
    }
}
