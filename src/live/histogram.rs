//! Fixed-bucket histograms (Prometheus' cumulative `le` buckets, in seconds) and a ring of the latest
//! values (for percentiles over a recent window), both plain data the aggregator fills and readers copy.

use std::collections::VecDeque;

/// Bucket upper bounds (seconds) for time to first token and whole-request latency.
pub const LATENCY_BOUNDS_S: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Bucket upper bounds (seconds) for the gaps between output chunks.
pub const ITL_BOUNDS_S: &[f64] = &[
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Bucket upper bounds (seconds) for the client's own delays (send lag, read lag).
pub const LAG_BOUNDS_S: &[f64] = &[
    0.000_05, 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
];

/// Counts of observations per bucket (the last one is `+Inf`), their sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Upper bounds of the finite buckets, ascending.
    pub bounds: &'static [f64],
    /// Observations per bucket (not cumulative), `bounds.len() + 1` of them.
    pub counts: Vec<u64>,
    /// Sum of the observations.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Adds one observation (NaN is ignored).
    pub fn observe(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        let i = self
            .bounds
            .iter()
            .position(|&b| v <= b)
            .unwrap_or(self.bounds.len());
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Adds `other`'s observations (same bounds).
    pub fn merge(&mut self, other: &Histogram) {
        debug_assert_eq!(self.bounds, other.bounds);
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.sum += other.sum;
        self.count += other.count;
    }

    /// Forgets every observation.
    pub fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.sum = 0.0;
        self.count = 0;
    }

    /// `(upper bound, cumulative count)` per bucket, `+Inf` last, as the exposition format writes them.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut total = 0;
        self.bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(&self.counts)
            .map(move |(b, c)| {
                total += c;
                (b, total)
            })
    }
}

/// The latest `cap` values of a series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ring {
    values: VecDeque<f64>,
    cap: usize,
}

impl Ring {
    /// An empty ring keeping `cap` values.
    pub fn new(cap: usize) -> Self {
        Ring {
            values: VecDeque::with_capacity(cap),
            cap,
        }
    }

    /// Adds `v`, dropping the oldest value when full.
    pub fn push(&mut self, v: f64) {
        if self.cap == 0 {
            return;
        }
        if self.values.len() == self.cap {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    /// Adds the values of `from` (oldest first), keeping the latest `cap`.
    pub fn extend_from(&mut self, from: &[f64]) {
        let skip = from.len().saturating_sub(self.cap);
        for &v in &from[skip..] {
            self.push(v);
        }
    }

    /// The values, oldest first.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter().copied()
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The `q` quantile (0..=1) of `values` by nearest rank (`None` when empty): a display figure for the
/// recent window, not one of evalscope's columns.
pub fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_with_inf_last() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        for v in [0.05, 0.1, 0.5, 3.0, f64::NAN] {
            h.observe(v);
        }
        let got: Vec<(f64, u64)> = h.cumulative().collect();
        assert_eq!(got, vec![(0.1, 2), (1.0, 3), (f64::INFINITY, 4)]);
        assert_eq!(h.count, 4);
        assert!((h.sum - 3.65).abs() < 1e-12);
        let mut total = Histogram::new(&[0.1, 1.0]);
        total.merge(&h);
        total.merge(&h);
        assert_eq!(total.count, 8);
        h.clear();
        assert_eq!(h.cumulative().last(), Some((f64::INFINITY, 0)));
    }

    #[test]
    fn a_ring_keeps_the_latest_values() {
        let mut r = Ring::new(3);
        r.extend_from(&[1.0, 2.0]);
        r.extend_from(&[3.0, 4.0, 5.0, 6.0]);
        assert_eq!(r.values().collect::<Vec<_>>(), vec![4.0, 5.0, 6.0]);
        r.push(7.0);
        assert_eq!(r.values().collect::<Vec<_>>(), vec![5.0, 6.0, 7.0]);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.5), Some(50.0));
        assert_eq!(quantile(&mut v, 0.99), Some(99.0));
        assert_eq!(quantile(&mut v, 1.0), Some(100.0));
        assert_eq!(quantile(&mut v, 0.0), Some(1.0));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}
