//! Distribution-free intervals for a percentile of one run: the order statistics that bracket it.
//!
//! * Independent rows (one value per request: TTFT, TPOT, latency): the number of rows at or below the
//!   true p-quantile is Binomial(n, p) whatever the distribution, so the order statistics of ranks
//!   [`order_statistic_ranks`] give an interval with at least the stated coverage (exact binomial tails,
//!   equal on both sides).
//! * Rows in clusters (every token gap of every request: ITL), where gaps of one request may be
//!   correlated: Woodruff's interval — the standard error of the empirical CDF at the estimate, from the
//!   clusters' totals (a ratio estimator's linearised variance), mapped back through the pooled sample
//!   ([`woodruff_probabilities`]). With clusters of one row it is the normal approximation of the above.
//!
//! Positions follow evalscope's nearest-rank rule ([`rank_index`]), so the point is evalscope's percentile.

use super::dist::{binomial_cdf, normal_quantile};

/// evalscope's nearest rank: the 0-based index `max(0, ⌈n·q⌉ − 1)` of probability `q` in a sorted sample
/// of `n` (at most `n − 1`).
pub fn rank_index(n: usize, q: f64) -> usize {
    let r = (n as f64 * q).ceil() as i64 - 1;
    r.clamp(0, n.saturating_sub(1) as i64) as usize
}

/// The 1-based ranks (l, u) of the order statistics whose interval [x₍ₗ₎, x₍ᵤ₎] holds the `p`-quantile of
/// the distribution with probability ≥ `level` (each tail ≤ (1 − level)/2); `None` for an end the
/// sample is too small to give (p99 needs n ≥ 368 for its upper end at 95 %).
pub fn order_statistic_ranks(n: usize, p: f64, level: f64) -> (Option<usize>, Option<usize>) {
    if n == 0 {
        return (None, None);
    }
    let tail = (1.0 - level) / 2.0;
    let n64 = n as u64;
    // P(x₍ₗ₎ > ξ) = P(B ≤ l − 1): the largest l with that ≤ tail.
    let below = |l: usize| binomial_cdf(l as i64 - 1, n64, p) <= tail;
    // P(x₍ᵤ₎ < ξ) = 1 − P(B ≤ u − 1): the smallest u with that ≤ tail.
    let above = |u: usize| 1.0 - binomial_cdf(u as i64 - 1, n64, p) <= tail;
    let low = if below(1) {
        // below(l) holds from 1 up to some l: the last one.
        let (mut lo, mut hi) = (1usize, n);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if below(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    } else {
        None
    };
    let high = if above(n) {
        let (mut lo, mut hi) = (1usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if above(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    } else {
        None
    };
    (low, high)
}

/// One cluster (a request) of a pooled sample: how many of its values are at or below the estimate, and
/// how many it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterCount {
    /// Values at or below the percentile's estimate.
    pub at_or_below: usize,
    /// Values in the cluster.
    pub size: usize,
}

/// Woodruff's interval on the probability scale: `p ± z·se(F̂)`, where F̂ is the share of pooled values at
/// or below the estimate and se its cluster-robust standard error. The caller reads the pooled sample's
/// nearest-rank values at these probabilities; `None` where the bound leaves (0, 1).
pub fn woodruff_probabilities(
    clusters: &[ClusterCount],
    p: f64,
    level: f64,
) -> (Option<f64>, Option<f64>) {
    let k = clusters.len();
    let total: usize = clusters.iter().map(|c| c.size).sum();
    if k < 2 || total == 0 {
        return (None, None);
    }
    let m = total as f64;
    let f = clusters.iter().map(|c| c.at_or_below).sum::<usize>() as f64 / m;
    let ss: f64 = clusters
        .iter()
        .map(|c| (c.at_or_below as f64 - f * c.size as f64).powi(2))
        .sum();
    let var = k as f64 / (k as f64 - 1.0) * ss / (m * m);
    // A sample whose clusters all agree still has the binomial floor of one pooled draw.
    let se = var.max(p * (1.0 - p) / m).sqrt();
    let z = normal_quantile(0.5 + level / 2.0);
    let (lo, hi) = (p - z * se, p + z * se);
    ((lo > 0.0).then_some(lo), (hi < 1.0).then_some(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_positions_are_evalscopes() {
        assert_eq!(rank_index(4, 0.5), 1);
        assert_eq!(rank_index(4, 0.99), 3);
        assert_eq!(rank_index(1000, 0.99), 989);
        assert_eq!(rank_index(10, 0.0), 0);
        assert_eq!(rank_index(10, 1.0), 9);
    }

    #[test]
    fn median_ranks_match_the_table() {
        // The classic table of distribution-free 95 % intervals for the median: n = 10 → (2, 9),
        // n = 20 → (6, 15), n = 100 → (40, 61).
        assert_eq!(order_statistic_ranks(10, 0.5, 0.95), (Some(2), Some(9)));
        assert_eq!(order_statistic_ranks(20, 0.5, 0.95), (Some(6), Some(15)));
        assert_eq!(order_statistic_ranks(100, 0.5, 0.95), (Some(40), Some(61)));
    }

    #[test]
    fn p99_needs_enough_rows_for_its_upper_end() {
        // 1 − 0.99ⁿ ≥ 0.975 first holds at n = 368.
        assert_eq!(order_statistic_ranks(367, 0.99, 0.95).1, None);
        assert_eq!(order_statistic_ranks(368, 0.99, 0.95).1, Some(368));
        let (l, u) = order_statistic_ranks(1000, 0.99, 0.95);
        let (l, u) = (l.unwrap(), u.unwrap());
        assert!(
            (981..=985).contains(&l) && (995..=998).contains(&u),
            "{l} {u}"
        );
        // Each tail is at most 2.5 %.
        let tail_low = binomial_cdf(l as i64 - 1, 1000, 0.99);
        let tail_high = 1.0 - binomial_cdf(u as i64 - 1, 1000, 0.99);
        assert!(tail_low <= 0.025 && tail_high <= 0.025);
        assert!(binomial_cdf(l as i64, 1000, 0.99) > 0.025);
    }

    #[test]
    fn coverage_is_at_least_the_level_for_any_distribution() {
        // Uniform(0, 1) samples from a fixed LCG: the true p90 is 0.9.
        let mut state = 12345u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (n, trials) = (200, 2000);
        let (l, u) = order_statistic_ranks(n, 0.9, 0.95);
        let (l, u) = (l.unwrap(), u.unwrap());
        let mut covered = 0;
        for _ in 0..trials {
            let mut xs: Vec<f64> = (0..n).map(|_| uniform()).collect();
            xs.sort_by(f64::total_cmp);
            if xs[l - 1] <= 0.9 && 0.9 <= xs[u - 1] {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        assert!((0.94..=0.99).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn woodruff_with_single_clusters_is_the_binomial_width() {
        let n = 10_000;
        let clusters: Vec<ClusterCount> = (0..n)
            .map(|i| ClusterCount {
                at_or_below: usize::from(i < 9_900),
                size: 1,
            })
            .collect();
        let (lo, hi) = woodruff_probabilities(&clusters, 0.99, 0.95);
        let half = 1.96 * (0.99f64 * 0.01 / n as f64).sqrt();
        assert!((lo.unwrap() - (0.99 - half)).abs() < 1e-4);
        assert!((hi.unwrap() - (0.99 + half)).abs() < 1e-4);
        // Whole clusters below or above: wider than if the values were independent.
        let lumpy: Vec<ClusterCount> = (0..100)
            .map(|i| ClusterCount {
                at_or_below: if i < 99 { 100 } else { 0 },
                size: 100,
            })
            .collect();
        let (lo2, _) = woodruff_probabilities(&lumpy, 0.99, 0.95);
        assert!(lo2.unwrap() < lo.unwrap() - 0.005, "{lo2:?}");
    }
}
