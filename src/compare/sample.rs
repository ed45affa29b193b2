//! One run's values, read back from its folder: every successful request's TTFT, TPOT, latency and token
//! gaps from the `result` table of its database (evalscope's columns, so evalscope's own runs read the
//! same), the throughputs from its summary; and the estimates `compare` needs from them.
//!
//! The row sets are those of evalscope's percentile table: TTFT of the streamed requests (of all when
//! none streamed), TPOT of the streamed requests where it is > 0, latency of all, ITL every gap of every
//! request (one cluster per request).

use rusqlite::{Connection, OpenFlags};

use super::metric::{Metric, Quantity, Statistic};
use super::CompareError;
use crate::run_folder::RunDir;
use crate::stats::quantile::{
    order_statistic_ranks, rank_index, woodruff_probabilities, ClusterCount,
};
use crate::stats::{MeanEstimate, QuantileEstimate};

/// One run's values.
#[derive(Debug, Clone, Default)]
pub struct RunSample {
    /// TTFT, ms, sorted.
    ttft_ms: Vec<f64>,
    /// TPOT, ms, sorted.
    tpot_ms: Vec<f64>,
    /// Latency, s, sorted.
    latency_s: Vec<f64>,
    /// Every request's token gaps, ms.
    itl_ms: Vec<Vec<f64>>,
    /// Every gap, ms, sorted.
    itl_sorted: Vec<f64>,
    /// `Req Throughput (req/s)` of the summary.
    rps: Option<f64>,
    /// `Output Throughput (tok/s)` of the summary.
    tps: Option<f64>,
    /// Successful requests.
    pub succeeded: usize,
    /// Failed requests.
    pub failed: usize,
}

/// One stored row, as far as `compare` reads it.
struct Row {
    success: bool,
    stream: bool,
    ttft_s: Option<f64>,
    tpot_s: Option<f64>,
    latency_s: Option<f64>,
    itl: Option<String>,
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    v
}

impl RunSample {
    /// Reads run `dir`: its rows and its summary's throughputs.
    pub fn read(dir: &RunDir) -> Result<RunSample, CompareError> {
        let db = dir.database();
        let bad = |why: String| CompareError::BadRun {
            path: dir.path().to_path_buf(),
            why,
        };
        if !db.is_file() {
            return Err(bad(format!("it has no database ({})", db.display())));
        }
        let rows = read_rows(&db).map_err(|e| bad(format!("its database cannot be read: {e}")))?;
        let mut sample = RunSample::from_rows(rows);
        if let Some(summary) = dir.read_summary() {
            let num = |k: &str| summary.get(k).and_then(serde_json::Value::as_f64);
            sample.rps = num("Req Throughput (req/s)");
            sample.tps = num("Output Throughput (tok/s)");
        }
        Ok(sample)
    }

    fn from_rows(rows: Vec<Row>) -> RunSample {
        let ok: Vec<&Row> = rows.iter().filter(|r| r.success).collect();
        let any_stream = ok.iter().any(|r| r.stream);
        let streamed = || ok.iter().filter(move |r| r.stream || !any_stream);
        let ttft_ms = sorted(
            streamed()
                .filter_map(|r| r.ttft_s)
                .map(|s| s * 1e3)
                .collect(),
        );
        let tpot_ms = sorted(
            streamed()
                .filter_map(|r| r.tpot_s)
                .filter(|t| !any_stream || *t > 0.0)
                .map(|s| s * 1e3)
                .collect(),
        );
        let latency_s = sorted(ok.iter().filter_map(|r| r.latency_s).collect());
        let itl_ms: Vec<Vec<f64>> = ok
            .iter()
            .map(|r| {
                r.itl
                    .as_deref()
                    .and_then(|t| serde_json::from_str::<Vec<f64>>(t).ok())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|x| x.is_finite())
                    .map(|s| s * 1e3)
                    .collect()
            })
            .collect();
        let itl_sorted = sorted(itl_ms.iter().flatten().copied().collect());
        RunSample {
            ttft_ms,
            tpot_ms,
            latency_s,
            itl_ms,
            itl_sorted,
            rps: None,
            tps: None,
            succeeded: ok.len(),
            failed: rows.len() - ok.len(),
        }
    }

    /// The sorted values of a per-request quantity.
    fn values(&self, q: Quantity) -> &[f64] {
        match q {
            Quantity::Ttft => &self.ttft_ms,
            Quantity::Tpot => &self.tpot_ms,
            Quantity::Latency => &self.latency_s,
            Quantity::Itl => &self.itl_sorted,
            Quantity::Rps | Quantity::Tps => &[],
        }
    }

    /// How many values `metric` is computed from.
    pub fn count(&self, metric: Metric) -> usize {
        self.values(metric.quantity).len()
    }

    /// The run's value of `metric`: the mean or nearest-rank percentile of its rows, or its throughput;
    /// `None` when it has no such values.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        match (metric.quantity, metric.statistic) {
            (Quantity::Rps, _) => self.rps,
            (Quantity::Tps, _) => self.tps,
            (q, Statistic::Mean) => {
                let v = self.values(q);
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            }
            (q, Statistic::Percentile(p)) => {
                let v = self.values(q);
                (!v.is_empty()).then(|| v[rank_index(v.len(), f64::from(p) / 100.0)])
            }
            (_, Statistic::Run) => None,
        }
    }

    /// The mean of a per-request quantity with its variance: independent rows, or for ITL the gaps
    /// clustered by request.
    pub fn mean_estimate(&self, q: Quantity) -> Option<MeanEstimate> {
        match q {
            Quantity::Rps | Quantity::Tps => None,
            Quantity::Itl => {
                let clusters: Vec<(f64, usize)> = self
                    .itl_ms
                    .iter()
                    .filter(|g| !g.is_empty())
                    .map(|g| (g.iter().sum(), g.len()))
                    .collect();
                (!clusters.is_empty()).then(|| MeanEstimate::clustered(&clusters))
            }
            _ => {
                let v = self.values(q);
                (!v.is_empty()).then(|| MeanEstimate::of(v))
            }
        }
    }

    /// The `p`-th percentile of a per-request quantity with its distribution-free interval at `level`:
    /// order statistics for independent rows, Woodruff's interval for ITL's clustered gaps.
    pub fn quantile_estimate(&self, q: Quantity, p: u32, level: f64) -> Option<QuantileEstimate> {
        let v = self.values(q);
        if v.is_empty() || q.is_run_level() {
            return None;
        }
        let prob = f64::from(p) / 100.0;
        let value = v[rank_index(v.len(), prob)];
        let (low, high) = if q == Quantity::Itl {
            let counts: Vec<ClusterCount> = self
                .itl_ms
                .iter()
                .filter(|g| !g.is_empty())
                .map(|g| ClusterCount {
                    at_or_below: g.iter().filter(|x| **x <= value).count(),
                    size: g.len(),
                })
                .collect();
            let (lo, hi) = woodruff_probabilities(&counts, prob, level);
            (
                lo.map(|pr| v[rank_index(v.len(), pr)]),
                hi.map(|pr| v[rank_index(v.len(), pr)]),
            )
        } else {
            let (l, u) = order_statistic_ranks(v.len(), prob, level);
            (l.map(|r| v[r - 1]), u.map(|r| v[r - 1]))
        };
        Some(QuantileEstimate { value, low, high })
    }
}

fn read_rows(db: &std::path::Path) -> rusqlite::Result<Vec<Row>> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut stmt = conn.prepare(
        "SELECT success, is_stream, first_chunk_latency, time_per_output_token, latency, inter_token_latencies FROM result",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Row {
            success: r.get::<_, Option<i64>>(0)?.unwrap_or(0) != 0,
            stream: r.get::<_, Option<i64>>(1)?.unwrap_or(0) != 0,
            ttft_s: r.get(2)?,
            tpot_s: r.get(3)?,
            latency_s: r.get(4)?,
            itl: r.get(5)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stream: bool, ttft: f64, tpot: f64, latency: f64, itl: &str) -> Row {
        Row {
            success: true,
            stream,
            ttft_s: Some(ttft),
            tpot_s: Some(tpot),
            latency_s: Some(latency),
            itl: Some(itl.into()),
        }
    }

    #[test]
    fn row_sets_are_evalscopes() {
        let mut rows = vec![
            row(true, 0.010, 0.002, 0.1, "[0.001, 0.003]"),
            row(true, 0.030, 0.0, 0.2, "[]"),
            row(false, 0.500, 0.0, 0.5, "[]"),
        ];
        rows.push(Row {
            success: false,
            stream: true,
            ttft_s: None,
            tpot_s: None,
            latency_s: None,
            itl: None,
        });
        let s = RunSample::from_rows(rows);
        assert_eq!((s.succeeded, s.failed), (3, 1));
        // TTFT: the streamed rows only; TPOT: streamed and > 0; latency: all successes.
        assert_eq!(s.ttft_ms, [10.0, 30.0]);
        assert_eq!(s.tpot_ms, [2.0]);
        assert_eq!(s.latency_s, [0.1, 0.2, 0.5]);
        assert_eq!(s.itl_sorted, [1.0, 3.0]);
        let avg = |n: &str| s.value(Metric::parse(n).unwrap());
        assert_eq!(avg("avg_ttft"), Some(20.0));
        assert_eq!(avg("p50_latency"), Some(0.2));
        assert_eq!(avg("avg_itl"), Some(2.0));
        assert_eq!(avg("rps"), None);
        // Without any streamed row, every success counts (evalscope's fallback).
        let s = RunSample::from_rows(vec![row(false, 0.5, 0.0, 0.5, "[]")]);
        assert_eq!((s.ttft_ms.len(), s.tpot_ms.len()), (1, 1));
    }

    #[test]
    fn percentile_estimates_bracket_the_value() {
        let rows = (1..=1000)
            .map(|i| row(true, f64::from(i) / 1000.0, 0.001, 1.0, "[0.001]"))
            .collect();
        let s = RunSample::from_rows(rows);
        let e = s.quantile_estimate(Quantity::Ttft, 99, 0.95).unwrap();
        // 1..=1000 ms: p99 is 990; the order statistics of ranks 983/984 and 996/997.
        assert_eq!(e.value, 990.0);
        let (lo, hi) = (e.low.unwrap(), e.high.unwrap());
        assert!(
            (981.0..=985.0).contains(&lo) && (995.0..=998.0).contains(&hi),
            "{lo} {hi}"
        );
        let m = s.mean_estimate(Quantity::Ttft).unwrap();
        assert!((m.value - 500.5).abs() < 1e-9 && m.df == 999.0);
    }
}
