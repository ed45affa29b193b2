//! PD-disaggregation handoff metrics (`--enable-pd-metrics`), as evalscope 1.14.1 estimates them from each
//! streamed reply's inter-token latencies (ITL, between output chunks):
//! * handoff latency = the first ITL (prefill node → decode node hand-off shows up there);
//! * handoff overhead = max(0, first ITL − median of the rest), when there is a rest;
//! * steady ITL = every ITL after the first, pooled.
//!
//! The summary gets `Avg Steady ITL (ms)`, `Avg PD Handoff Latency (ms)` and `Avg PD Handoff Overhead (ms)`
//! (each only when it has samples), the percentile table `Steady ITL (ms)`, `PD Handoff Latency (ms)` and
//! `PD Handoff Overhead (ms)` (each only when non-empty, after `ITL (ms)`).

use super::summary::PyNum;

/// Running sums and samples of the PD metrics of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct PdMetrics {
    steady_total_s: f64,
    n_steady: u64,
    handoff_total_s: f64,
    overhead_total_s: f64,
    /// Every steady ITL sample, seconds.
    steady_s: Vec<f64>,
    /// Per reply with ITLs: its handoff latency, seconds.
    handoff_s: Vec<f64>,
    /// Per reply with at least two ITLs: its handoff overhead, seconds.
    overhead_s: Vec<f64>,
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
    /// Counts one successful reply's inter-token latencies (seconds).
    pub fn add(&mut self, itl_s: &[f64]) {
        let Some((&first, rest)) = itl_s.split_first() else {
            return;
        };
        self.handoff_total_s += first;
        self.handoff_s.push(first);
        if rest.is_empty() {
            return;
        }
        self.steady_total_s += rest.iter().sum::<f64>();
        self.n_steady += rest.len() as u64;
        self.steady_s.extend_from_slice(rest);
        let overhead = (first - median(rest)).max(0.0);
        self.overhead_total_s += overhead;
        self.overhead_s.push(overhead);
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
                avg(self.handoff_total_s, self.handoff_s.len()),
            ),
            (
                super::summary::keys::AVG_PD_HANDOFF_OVERHEAD,
                avg(self.overhead_total_s, self.overhead_s.len()),
            ),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }

    /// The percentile columns with samples, in milliseconds.
    pub fn percentile_columns(&self) -> Vec<(&'static str, Vec<f64>)> {
        let ms = |v: &[f64]| v.iter().map(|x| x * 1000.0).collect::<Vec<f64>>();
        [
            ("Steady ITL (ms)", ms(&self.steady_s)),
            ("PD Handoff Latency (ms)", ms(&self.handoff_s)),
            ("PD Handoff Overhead (ms)", ms(&self.overhead_s)),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_is_the_first_gap_and_overhead_its_excess_over_the_median() {
        let mut pd = PdMetrics::default();
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
        assert_eq!(cols[0].1.len(), 5);
        assert_eq!(cols[1].1.len(), 3);
        assert_eq!(cols[2].1.len(), 2);
        assert!(PdMetrics::default().summary_keys().is_empty());
    }
}
