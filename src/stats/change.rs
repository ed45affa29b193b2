//! The change from a base run to a new one and its confidence interval, both relative (new / base − 1,
//! computed on the log scale, so the interval respects that a ratio is positive) and absolute (new − base,
//! in the metric's unit):
//!
//! * a **mean** of independent rows (or of clustered rows, with a linearised variance): Welch's interval —
//!   the delta method on the log ratio for the relative change, Welch–Satterthwaite degrees of freedom
//!   ([`mean_change`]);
//! * a **percentile**: each run's distribution-free interval (see [`super::quantile`]) combined by MOVER
//!   (Zou & Donner, 2008: the "method of variance estimates recovery", which recovers each side's
//!   uncertainty from its own confidence limits, so a skewed percentile keeps its skew) ([`quantile_change`]);
//! * **repeats**: one value per run on each side, Welch's t interval on the logs (relative) and on the
//!   values (absolute); with repeats on one side only, that side's variance stands for both
//!   ([`repeats_change`]).

use super::dist::t_quantile;

/// A confidence interval; an end may be infinite (the data cannot bound it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

impl Interval {
    /// Whether the interval is bounded on both ends.
    pub fn is_bounded(&self) -> bool {
        self.low.is_finite() && self.high.is_finite()
    }

    /// Whether `x` lies in it.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// A change: its point estimate and, when the data give one, its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// The point estimate.
    pub point: f64,
    /// The interval, `None` when the data give none.
    pub interval: Option<Interval>,
}

impl Change {
    const NONE: Change = Change {
        point: f64::NAN,
        interval: None,
    };
}

/// The change of one metric: relative (a fraction: 0.1 is +10 %) and absolute (the metric's unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Changes {
    /// new / base − 1; `None`-interval and NaN point when a side is not positive.
    pub relative: Change,
    /// new − base.
    pub absolute: Change,
}

/// A mean and the variance of that estimate, with its degrees of freedom (n − 1 for n independent rows,
/// clusters − 1 for clustered rows; 0 when it has none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanEstimate {
    /// The mean.
    pub value: f64,
    /// The variance of the mean (s² / n for independent rows).
    pub var: f64,
    /// Degrees of freedom of `var`.
    pub df: f64,
}

impl MeanEstimate {
    /// The mean of independent `values` and its variance s² / n.
    pub fn of(values: &[f64]) -> MeanEstimate {
        let n = values.len() as f64;
        let value = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - value).powi(2)).sum::<f64>() / (n - 1.0) / n
        } else {
            f64::NAN
        };
        MeanEstimate {
            value,
            var,
            df: n - 1.0,
        }
    }

    /// The pooled mean Σ sums / Σ counts of clustered values (each cluster: its sum and its count), with
    /// the ratio estimator's linearised variance k/(k−1) · Σ (sumᵢ − mean·countᵢ)² / (Σ count)².
    pub fn clustered(clusters: &[(f64, usize)]) -> MeanEstimate {
        let k = clusters.iter().filter(|(_, c)| *c > 0).count() as f64;
        let total: usize = clusters.iter().map(|(_, c)| c).sum();
        let m = total as f64;
        let value = clusters.iter().map(|(s, _)| s).sum::<f64>() / m;
        let ss: f64 = clusters
            .iter()
            .map(|(s, c)| (s - value * *c as f64).powi(2))
            .sum();
        let var = if k > 1.0 {
            k / (k - 1.0) * ss / (m * m)
        } else {
            f64::NAN
        };
        MeanEstimate {
            value,
            var,
            df: k - 1.0,
        }
    }
}

/// Welch–Satterthwaite degrees of freedom of a sum of two variance components.
fn welch_df(a: f64, df_a: f64, b: f64, df_b: f64) -> f64 {
    let denom = a * a / df_a + b * b / df_b;
    if denom > 0.0 {
        (a + b).powi(2) / denom
    } else {
        // Both variances 0: nothing varies; any df gives a zero-width interval.
        df_a + df_b
    }
}

fn relative_of(log_point: f64, half_low: f64, half_high: f64) -> Change {
    Change {
        point: log_point.exp_m1(),
        interval: Some(Interval {
            low: (log_point - half_low).exp_m1(),
            high: (log_point + half_high).exp_m1(),
        }),
    }
}

/// The change between two means at confidence `level`.
pub fn mean_change(base: MeanEstimate, new: MeanEstimate, level: f64) -> Changes {
    let q = 0.5 + level / 2.0;
    let usable = |e: &MeanEstimate| e.df >= 1.0 && e.var.is_finite() && e.var >= 0.0;
    let absolute = if usable(&base) && usable(&new) {
        let df = welch_df(new.var, new.df, base.var, base.df);
        let half = t_quantile(q, df) * (new.var + base.var).sqrt();
        let d = new.value - base.value;
        Change {
            point: d,
            interval: Some(Interval {
                low: d - half,
                high: d + half,
            }),
        }
    } else {
        Change {
            point: new.value - base.value,
            interval: None,
        }
    };
    let relative = if base.value > 0.0 && new.value > 0.0 {
        let lp = (new.value / base.value).ln();
        if usable(&base) && usable(&new) {
            let (a, b) = (
                new.var / (new.value * new.value),
                base.var / (base.value * base.value),
            );
            let half = t_quantile(q, welch_df(a, new.df, b, base.df)) * (a + b).sqrt();
            relative_of(lp, half, half)
        } else {
            Change {
                point: lp.exp_m1(),
                interval: None,
            }
        }
    } else {
        Change::NONE
    };
    Changes { relative, absolute }
}

/// A percentile of one run with its distribution-free interval at the comparison's level (`None`: the
/// sample cannot bound that end).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileEstimate {
    /// The percentile (evalscope's nearest rank).
    pub value: f64,
    /// Lower end of its interval.
    pub low: Option<f64>,
    /// Upper end of its interval.
    pub high: Option<f64>,
}

/// MOVER's limits for `new − base` from each side's estimate and limits (on whatever scale they are given).
fn mover(base: (f64, f64, f64), new: (f64, f64, f64)) -> Interval {
    let ((b, bl, bh), (n, nl, nh)) = (base, new);
    let d = n - b;
    Interval {
        low: d - ((n - nl).powi(2) + (bh - b).powi(2)).sqrt(),
        high: d + ((nh - n).powi(2) + (b - bl).powi(2)).sqrt(),
    }
}

/// The change between two percentiles, each with its own interval at the comparison's level.
pub fn quantile_change(base: QuantileEstimate, new: QuantileEstimate) -> Changes {
    let limits = |e: &QuantileEstimate, f: &dyn Fn(f64) -> f64| {
        (
            f(e.value),
            e.low.map_or(f64::NEG_INFINITY, f),
            e.high.map_or(f64::INFINITY, f),
        )
    };
    let id = |x: f64| x;
    let absolute = Change {
        point: new.value - base.value,
        interval: Some(mover(limits(&base, &id), limits(&new, &id))),
    };
    let relative = if base.value > 0.0 && new.value > 0.0 {
        let ln = |x: f64| if x > 0.0 { x.ln() } else { f64::NEG_INFINITY };
        let i = mover(limits(&base, &ln), limits(&new, &ln));
        Change {
            point: (new.value / base.value).ln().exp_m1(),
            interval: Some(Interval {
                low: i.low.exp_m1(),
                high: i.high.exp_m1(),
            }),
        }
    } else {
        Change::NONE
    };
    Changes { relative, absolute }
}

/// Welch's t interval for mean(new) − mean(base) of per-run values; with two or more values on one side
/// only, that side's variance stands for both (the same setup's run-to-run noise); `None` without any.
fn welch_runs(base: &[f64], new: &[f64], level: f64) -> Change {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var =
        |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0);
    let (kb, kn) = (base.len() as f64, new.len() as f64);
    let (mb, mn) = (mean(base), mean(new));
    let d = mn - mb;
    let (se2, df) = match (base.len() >= 2, new.len() >= 2) {
        (true, true) => {
            let (a, b) = (var(new, mn) / kn, var(base, mb) / kb);
            (a + b, welch_df(a, kn - 1.0, b, kb - 1.0))
        }
        (true, false) => (var(base, mb) * (1.0 / kb + 1.0 / kn), kb - 1.0),
        (false, true) => (var(new, mn) * (1.0 / kb + 1.0 / kn), kn - 1.0),
        (false, false) => {
            return Change {
                point: d,
                interval: None,
            }
        }
    };
    let half = t_quantile(0.5 + level / 2.0, df) * se2.sqrt();
    Change {
        point: d,
        interval: Some(Interval {
            low: d - half,
            high: d + half,
        }),
    }
}

/// The change of a metric measured once per run, from each side's runs (repeats).
pub fn repeats_change(base: &[f64], new: &[f64], level: f64) -> Changes {
    if base.is_empty() || new.is_empty() {
        return Changes {
            relative: Change::NONE,
            absolute: Change::NONE,
        };
    }
    let absolute = welch_runs(base, new, level);
    let positive = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    let relative = if positive(base) && positive(new) {
        let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        let c = welch_runs(&ln(base), &ln(new), level);
        Change {
            point: c.point.exp_m1(),
            interval: c.interval.map(|i| Interval {
                low: i.low.exp_m1(),
                high: i.high.exp_m1(),
            }),
        }
    } else {
        Change::NONE
    };
    Changes { relative, absolute }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_change_by_hand() {
        // Equal variances and sizes: Welch's df is 2(n − 1) and the half-width t·√(2 s²/n).
        let base = MeanEstimate {
            value: 100.0,
            var: 4.0,
            df: 99.0,
        };
        let new = MeanEstimate {
            value: 110.0,
            var: 4.0,
            df: 99.0,
        };
        let c = mean_change(base, new, 0.95);
        let t = t_quantile(0.975, 198.0);
        let abs = c.absolute.interval.unwrap();
        assert!((c.absolute.point - 10.0).abs() < 1e-12);
        assert!((abs.high - (10.0 + t * 8f64.sqrt())).abs() < 1e-9);
        let rel = c.relative.interval.unwrap();
        assert!((c.relative.point - 0.1).abs() < 1e-12);
        let se = (4.0f64 / 12100.0 + 4.0 / 10000.0).sqrt();
        let df = welch_df(4.0 / 12100.0, 99.0, 4.0 / 10000.0, 99.0);
        let half = t_quantile(0.975, df) * se;
        assert!((rel.low - ((1.1f64).ln() - half).exp_m1()).abs() < 1e-12);
        assert!((rel.high - ((1.1f64).ln() + half).exp_m1()).abs() < 1e-12);
        // No variance on one side: no interval, the point stays.
        let one = MeanEstimate::of(&[5.0]);
        let c = mean_change(one, new, 0.95);
        assert!(c.relative.interval.is_none() && (c.relative.point - 21.0).abs() < 1e-12);
    }

    #[test]
    fn estimates_of_values_and_clusters() {
        let e = MeanEstimate::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((e.value, e.df), (2.5, 3.0));
        assert!((e.var - (5.0 / 3.0) / 4.0).abs() < 1e-12);
        // Clusters of one value each: the same mean; the variance differs only by k/(k−1) vs 1/(n−1)·1/n.
        let c = MeanEstimate::clustered(&[(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)]);
        assert_eq!((c.value, c.df), (2.5, 3.0));
        assert!((c.var - 4.0 / 3.0 * 5.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn mover_keeps_each_sides_skew() {
        // Base exactly known: the interval is new's own, shifted.
        let base = QuantileEstimate {
            value: 10.0,
            low: Some(10.0),
            high: Some(10.0),
        };
        let new = QuantileEstimate {
            value: 12.0,
            low: Some(11.0),
            high: Some(15.0),
        };
        let c = quantile_change(base, new);
        let a = c.absolute.interval.unwrap();
        assert_eq!((c.absolute.point, a.low, a.high), (2.0, 1.0, 5.0));
        let r = c.relative.interval.unwrap();
        assert!((r.low - 0.1).abs() < 1e-12 && (r.high - 0.5).abs() < 1e-12);
        // An end the sample cannot bound stays open.
        let open = QuantileEstimate { high: None, ..new };
        let c = quantile_change(base, open);
        assert_eq!(c.relative.interval.unwrap().high, f64::INFINITY);
        assert!(c.relative.interval.unwrap().low.is_finite());
    }

    #[test]
    fn repeats_use_welch_or_the_one_sides_variance() {
        let base = [10.0, 11.0, 12.0];
        let new = [13.0, 14.0, 15.0];
        let c = repeats_change(&base, &new, 0.95);
        let half = t_quantile(0.975, 4.0) * (2.0f64 / 3.0).sqrt();
        let a = c.absolute.interval.unwrap();
        assert!((a.low - (3.0 - half)).abs() < 1e-9 && (a.high - (3.0 + half)).abs() < 1e-9);
        let one = repeats_change(&base, &[14.0], 0.95);
        let half = t_quantile(0.975, 2.0) * (1.0f64 * (1.0 / 3.0 + 1.0)).sqrt();
        let a = one.absolute.interval.unwrap();
        assert!((a.high - (3.0 + half)).abs() < 1e-9);
        assert!(repeats_change(&[1.0], &[2.0], 0.95)
            .relative
            .interval
            .is_none());
        assert!((repeats_change(&[1.0], &[2.0], 0.95).relative.point - 1.0).abs() < 1e-12);
    }
}
