//! evalscope's percentile method: the 11 labels of every percentile table and the nearest-rank value
//! behind each (spec §4.2), shared by the exact tables and the spilled columns.

/// The row labels, in order (`min` = p0, `max` = p100).
pub const PERCENTILE_LABELS: [&str; 11] = [
    "min", "1%", "5%", "10%", "25%", "50%", "75%", "90%", "95%", "99%", "max",
];

/// The percentile (0..=100) behind each label of [`PERCENTILE_LABELS`].
pub const PERCENTILES: [u32; 11] = [0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100];

/// Nearest-rank percentile of ascending `sorted` values (evalscope `utils/db_util.py`): `p >= 100` gives
/// the last value, otherwise index `max(0, ceil(n * p / 100) - 1)`; an empty slice gives NaN.
pub fn nearest_rank(sorted: &[f64], p: u32) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if p >= 100 {
        return sorted[n - 1];
    }
    // ceil(n * p / 100) on integers: exact, and equal to Python's float ceil for any realistic n.
    let rank = (n * p as usize).div_ceil(100);
    sorted[rank.saturating_sub(1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_single_value() {
        for p in PERCENTILES {
            assert_eq!(nearest_rank(&[7.5], p), 7.5);
        }
    }

    #[test]
    fn nearest_rank_four_values_by_hand() {
        let v = [10.0, 20.0, 30.0, 40.0];
        // p0: ceil(0) - 1 = -1 → clamped to 0.
        assert_eq!(nearest_rank(&v, 0), 10.0);
        // p1: ceil(4*1/100 = 0.04) = 1 → index 0.
        assert_eq!(nearest_rank(&v, 1), 10.0);
        // p25: ceil(1.0) = 1 → index 0.
        assert_eq!(nearest_rank(&v, 25), 10.0);
        // p50: ceil(2.0) = 2 → index 1.
        assert_eq!(nearest_rank(&v, 50), 20.0);
        // p75: ceil(3.0) = 3 → index 2.
        assert_eq!(nearest_rank(&v, 75), 30.0);
        // p99: ceil(3.96) = 4 → index 3.
        assert_eq!(nearest_rank(&v, 99), 40.0);
        assert_eq!(nearest_rank(&v, 100), 40.0);
        assert_eq!(nearest_rank(&v, 150), 40.0);
    }

    #[test]
    fn nearest_rank_boundaries() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        // 200 * 5 / 100 = 10 exactly → index 9.
        assert_eq!(nearest_rank(&v, 5), 10.0);
        // 200 * 99 / 100 = 198 → index 197.
        assert_eq!(nearest_rank(&v, 99), 198.0);
        let v: Vec<f64> = (1..=7).map(f64::from).collect();
        // 7 * 50 / 100 = 3.5 → ceil 4 → index 3.
        assert_eq!(nearest_rank(&v, 50), 4.0);
    }

    #[test]
    fn nearest_rank_empty_is_nan() {
        assert!(nearest_rank(&[], 0).is_nan());
        assert!(nearest_rank(&[], 50).is_nan());
        assert!(nearest_rank(&[], 100).is_nan());
    }
}
