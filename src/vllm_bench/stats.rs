//! The statistics `vllm bench serve` reports, as numpy computes them: `np.mean`, `np.median`, `np.std`
//! (population, `ddof=0`) and `np.percentile` with its default linear interpolation between the two
//! nearest ranks. An empty series counts as `[0]`, as vLLM's `values or 0` makes it.

/// `np.mean`.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// `np.std` (population standard deviation).
pub fn std(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let m = mean(values);
    let var = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64;
    var.sqrt()
}

/// `np.percentile(values, p)` (linear) over `sorted` ascending values, `p` in 0..=100.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let rank = p / 100.0 * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            let t = rank - lo as f64;
            let (a, b) = (sorted[lo], sorted[hi]);
            // numpy's `_lerp`: from the nearer end, so the value at t = 1 is exactly b.
            if t >= 0.5 {
                b - (b - a) * (1.0 - t)
            } else {
                a + (b - a) * t
            }
        }
    }
}

/// `np.median` over `sorted` ascending values.
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// `values` sorted ascending.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy() {
        // np.percentile([1, 2, 3, 4], [25, 50, 90, 99]) = [1.75, 2.5, 3.7, 3.97]
        let v = [4.0, 1.0, 3.0, 2.0];
        let s = sorted(&v);
        for (p, want) in [
            (25.0, 1.75),
            (50.0, 2.5),
            (90.0, 3.7),
            (99.0, 3.97),
            (0.0, 1.0),
            (100.0, 4.0),
        ] {
            assert!(
                (percentile(&s, p) - want).abs() < 1e-12,
                "p{p}: {}",
                percentile(&s, p)
            );
        }
        assert_eq!(median(&s), 2.5);
        assert_eq!(median(&sorted(&[3.0, 1.0, 2.0])), 2.0);
        assert_eq!(mean(&v), 2.5);
        // np.std([1, 2, 3, 4]) = 1.118033988749895
        assert!((std(&v) - 1.118_033_988_749_895).abs() < 1e-15);
        // `values or 0`
        assert_eq!(
            (mean(&[]), std(&[]), median(&[]), percentile(&[], 99.0)),
            (0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }
}
