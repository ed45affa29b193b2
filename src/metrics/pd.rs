//! PD-disaggregation handoff metrics (`--enable-pd-metrics`), as evalscope 1.14.1 estimates them from each
//! streamed reply's inter-token latencies (ITL, between output chunks):
//! * handoff latency = the first ITL (prefill node → decode node hand-off shows up there);
//! * handoff overhead = max(0, first ITL − median of the rest), when there is a rest;
//! * steady ITL = every ITL after the first, pooled.
//!
//! The summary gets `Avg Steady ITL (ms)`, `Avg PD Handoff Latency (ms)` and `Avg PD Handoff Overhead (ms)`
//! (each only when it has samples), the percentile table `Steady ITL (ms)`, `PD Handoff Latency (ms)` and
//! `PD Handoff Overhead (ms)` (each only when non-empty, after `ITL (ms)`).

//!
//! The samples live in [`SortedSpill`] columns like the other percentile columns: at most `cap` values each
//! in memory, sorted runs spilled to the run folder beyond that, merged exactly at the end.

use std::path::PathBuf;
use std::sync::Arc;

use super::spill::SortedSpill;
use super::summary::PyNum;

/// Running sums and samples of the PD metrics of one run.
#[derive(Debug)]
pub(crate) struct PdMetrics {
    steady_total_s: f64,
    n_steady: u64,
    handoff_total_s: f64,
    n_handoff: u64,
    overhead_total_s: f64,
    n_overhead: u64,
    /// Every steady ITL sample, milliseconds.
    steady_ms: SortedSpill,
    /// Per reply with ITLs: its handoff latency, milliseconds.
    handoff_ms: SortedSpill,
    /// Per reply with at least two ITLs: its handoff overhead, milliseconds.
    overhead_ms: SortedSpill,
}

/// Python's `statistics.median` of a non-empty slice.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl PdMetrics {
    /// Empty columns holding at most `cap` values each in memory, spilling to `dir`.
    pub fn new(cap: usize, dir: Option<Arc<PathBuf>>) -> PdMetrics {
        let col = || SortedSpill::new(cap, dir.clone());
        PdMetrics {
            steady_total_s: 0.0,
            n_steady: 0,
            handoff_total_s: 0.0,
            n_handoff: 0,
            overhead_total_s: 0.0,
            n_overhead: 0,
            steady_ms: col(),
            handoff_ms: col(),
            overhead_ms: col(),
        }
    }

    /// Counts one successful reply's inter-token latencies (seconds).
    pub fn add(&mut self, itl_s: &[f64]) {
        let Some((&first, rest)) = itl_s.split_first() else {
            return;
        };
        self.handoff_total_s += first;
        self.n_handoff += 1;
        self.handoff_ms.push(first * 1000.0);
        if rest.is_empty() {
            return;
        }
        self.steady_total_s += rest.iter().sum::<f64>();
        self.n_steady += rest.len() as u64;
        rest.iter().for_each(|x| self.steady_ms.push(x * 1000.0));
        let overhead = (first - median(rest)).max(0.0);
        self.overhead_total_s += overhead;
        self.n_overhead += 1;
        self.overhead_ms.push(overhead * 1000.0);
    }

    /// The summary keys with samples, in evalscope's order, as `round(avg * 1000, 2)`.
    pub fn summary_keys(&self) -> Vec<(&'static str, PyNum)> {
        let avg = |total: f64, n: usize| (n > 0).then(|| PyNum::Float(total / n as f64).ms());
        [
            (
                super::summary::keys::AVG_STEADY_ITL,
                avg(self.steady_total_s, self.n_steady as usize),
            ),
            (
                super::summary::keys::AVG_PD_HANDOFF_LATENCY,
                avg(self.handoff_total_s, self.n_handoff as usize),
            ),
            (
                super::summary::keys::AVG_PD_HANDOFF_OVERHEAD,
                avg(self.overhead_total_s, self.n_overhead as usize),
            ),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }

    /// The percentile columns with samples, in milliseconds.
    pub fn percentile_columns(&self) -> Vec<(&'static str, &SortedSpill)> {
        [
            ("Steady ITL (ms)", &self.steady_ms),
            ("PD Handoff Latency (ms)", &self.handoff_ms),
            ("PD Handoff Overhead (ms)", &self.overhead_ms),
        ]
        .into_iter()
        .filter(|(_, v)| v.count() > 0)
        .collect()
    }

    /// Bytes of samples written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        [&self.steady_ms, &self.handoff_ms, &self.overhead_ms]
            .into_iter()
            .map(SortedSpill::disk_bytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_is_the_first_gap_and_overhead_its_excess_over_the_median() {
        let mut pd = PdMetrics::new(2, None);
        pd.add(&[0.050, 0.010, 0.012, 0.011]);
        pd.add(&[0.020]);
        pd.add(&[]);
        pd.add(&[0.005, 0.010, 0.020]);
        // Handoff: 50, 20, 5 ms → 25 ms; overhead: 50 − 11 = 39, max(0, 5 − 15) = 0 → 19.5 ms; steady: the
        // five later gaps, 63 ms in all → 12.6 ms.
        let keys: Vec<(&str, f64)> = pd
            .summary_keys()
            .into_iter()
            .map(|(k, v)| (k, v.as_f64()))
            .collect();
        assert_eq!(
            keys,
            [
                ("Avg Steady ITL (ms)", 12.6),
                ("Avg PD Handoff Latency (ms)", 25.0),
                ("Avg PD Handoff Overhead (ms)", 19.5)
            ]
        );
        let cols = pd.percentile_columns();
        assert_eq!(cols[0].1.count(), 5);
        assert_eq!(cols[1].1.count(), 3);
        assert_eq!(cols[2].1.count(), 2);
        assert!(PdMetrics::new(8, None).summary_keys().is_empty());
    }

    #[test]
    fn spilled_columns_equal_the_in_memory_columns_of_the_samples() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let dir = tempfile::tempdir().unwrap();
        let mut spilled = PdMetrics::new(3, Some(Arc::new(dir.path().to_path_buf())));
        // The oracle: every sample kept in a plain vector, in seconds, as the columns were built before.
        let (mut steady, mut handoff, mut overhead) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..500 {
            let n = rng.random_range(0..6);
            let itl: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0..50) as f64 / 1e3)
                .collect();
            spilled.add(&itl);
            if let Some((&first, rest)) = itl.split_first() {
                handoff.push(first);
                if !rest.is_empty() {
                    steady.extend_from_slice(rest);
                    overhead.push((first - median(rest)).max(0.0));
                }
            }
        }
        assert!(spilled.disk_bytes() > 0, "the columns spilled");
        let in_memory = |v: &[f64]| {
            let mut col = SortedSpill::new(v.len() + 1, None);
            v.iter().for_each(|x| col.push(x * 1000.0));
            super::super::percentile::percentile_column(&col)
        };
        let got: Vec<_> = spilled
            .percentile_columns()
            .into_iter()
            .map(|(k, c)| (k, super::super::percentile::percentile_column(c)))
            .collect();
        let want = vec![
            ("Steady ITL (ms)", in_memory(&steady)),
            ("PD Handoff Latency (ms)", in_memory(&handoff)),
            ("PD Handoff Overhead (ms)", in_memory(&overhead)),
        ];
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
}
