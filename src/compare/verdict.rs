//! One metric at one point: the change from BASE to NEW, its 95 % interval and the verdict.
//!
//! * One run on each side: a latency's mean and percentiles get their interval from the rows (see
//!   [`crate::stats::change`]); a throughput has only its point change and is inconclusive.
//! * Repeats on either side: every metric gets its interval from the runs' values (Welch's t on the logs),
//!   so it also covers run-to-run drift.
//!
//! The verdict reads the relative interval in the metric's bad direction: wholly on the bad side of 0 is
//! *regressed*, wholly on the good side *improved*, across 0 *no significant change* — or *inconclusive*
//! when there is no interval, or it crosses 0 with an open end (too few rows for that percentile).

use std::fmt;

use super::metric::{Metric, Statistic};
use super::sample::RunSample;
use crate::stats::change::{mean_change, quantile_change, repeats_change};
use crate::stats::{Change, Changes};

/// The confidence level of every interval.
pub const LEVEL: f64 = 0.95;

/// Where an interval comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The rows of one run on each side.
    Rows,
    /// The values of each side's runs (repeats).
    Repeats {
        /// BASE's runs.
        base: usize,
        /// NEW's runs.
        new: usize,
    },
}

/// A metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Changed in the good direction.
    Improved,
    /// Changed in the bad direction.
    Regressed,
    /// The interval holds 0.
    NoSignificantChange,
    /// No interval (or one open end across 0).
    Inconclusive,
}

impl Verdict {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricResult {
    /// Which metric.
    pub metric: Metric,
    /// BASE's value (the mean over its runs with repeats).
    pub base: Option<f64>,
    /// NEW's value.
    pub new: Option<f64>,
    /// The change and its intervals.
    pub changes: Changes,
    /// Where the interval comes from.
    pub method: Method,
    /// The verdict.
    pub verdict: Verdict,
    /// Why a metric is inconclusive, when that needs saying.
    pub note: Option<String>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The verdict of a relative change in a metric whose increase is bad when `up_is_bad`.
fn verdict_of(change: &Change, up_is_bad: bool) -> Verdict {
    let Some(i) = change.interval else {
        return Verdict::Inconclusive;
    };
    let (bad, good) = if up_is_bad {
        (i.low > 0.0, i.high < 0.0)
    } else {
        (i.high < 0.0, i.low > 0.0)
    };
    if bad {
        Verdict::Regressed
    } else if good {
        Verdict::Improved
    } else if i.is_bounded() {
        Verdict::NoSignificantChange
    } else {
        Verdict::Inconclusive
    }
}

/// `metric` at a point whose BASE runs are `base` and NEW runs `new` (repeat 1 first).
pub fn judge(metric: Metric, base: &[RunSample], new: &[RunSample]) -> MetricResult {
    let values =
        |runs: &[RunSample]| -> Vec<f64> { runs.iter().filter_map(|r| r.value(metric)).collect() };
    let (bv, nv) = (values(base), values(new));
    let repeats = base.len() > 1 || new.len() > 1;
    let q = metric.quantity;
    let (changes, method) = if repeats {
        let method = Method::Repeats {
            base: bv.len(),
            new: nv.len(),
        };
        (repeats_change(&bv, &nv, LEVEL), method)
    } else {
        let (b, n) = (&base[0], &new[0]);
        let changes = match metric.statistic {
            Statistic::Mean => match (b.mean_estimate(q), n.mean_estimate(q)) {
                (Some(be), Some(ne)) => Some(mean_change(be, ne, LEVEL)),
                _ => None,
            },
            Statistic::Percentile(p) => match (
                b.quantile_estimate(q, p, LEVEL),
                n.quantile_estimate(q, p, LEVEL),
            ) {
                (Some(be), Some(ne)) => Some(quantile_change(be, ne)),
                _ => None,
            },
            Statistic::Run => None,
        };
        // A throughput, or a metric one side lacks: the point change only.
        let changes = changes.unwrap_or_else(|| repeats_change(&bv, &nv, LEVEL));
        (changes, Method::Rows)
    };
    let mut verdict = verdict_of(&changes.relative, q.higher_is_worse());
    if changes.relative.point.is_nan() && changes.absolute.interval.is_some() {
        // A zero base (no relative change): judge the absolute interval.
        verdict = verdict_of(&changes.absolute, q.higher_is_worse());
    }
    let note = note(metric, base, new, &bv, &nv, &changes, repeats);
    MetricResult {
        metric,
        base: mean(&bv),
        new: mean(&nv),
        changes,
        method,
        verdict,
        note,
    }
}

/// Why `metric` has no (bounded) interval, when it has none.
fn note(
    metric: Metric,
    base: &[RunSample],
    new: &[RunSample],
    bv: &[f64],
    nv: &[f64],
    changes: &Changes,
    repeats: bool,
) -> Option<String> {
    if bv.is_empty() || nv.is_empty() {
        return Some(format!(
            "no {} values on {}",
            metric.quantity.key(),
            if bv.is_empty() { "BASE" } else { "NEW" }
        ));
    }
    let bounded = changes.relative.interval.is_some_and(|i| i.is_bounded());
    if bounded {
        return None;
    }
    if repeats {
        return (changes.relative.interval.is_none())
            .then(|| "one run on each side for this metric".to_string());
    }
    match metric.statistic {
        Statistic::Run => Some("one run each: a throughput needs --repeat".into()),
        Statistic::Percentile(p) => {
            let rows = base[0].count(metric).min(new[0].count(metric));
            let needed = min_rows(f64::from(p) / 100.0);
            (rows < needed)
                .then(|| format!("{rows} rows: an upper end for p{p} needs ≥ {needed} per run"))
        }
        Statistic::Mean => Some("too few rows for an interval".into()),
    }
}

/// The fewest rows whose largest value bounds the p-quantile from above at [`LEVEL`]: 1 − pⁿ ≥ (1 + level)/2.
fn min_rows(p: f64) -> usize {
    if p <= 0.0 {
        return 1;
    }
    (((1.0 - LEVEL) / 2.0).ln() / p.ln()).ceil() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_rows_for_the_upper_end() {
        assert_eq!(min_rows(0.99), 368);
        assert_eq!(min_rows(0.9), 36);
        assert_eq!(min_rows(0.5), 6);
    }

    #[test]
    fn verdicts_follow_the_bad_direction() {
        let c = |low: f64, high: f64| Change {
            point: (low + high) / 2.0,
            interval: Some(crate::stats::Interval { low, high }),
        };
        assert_eq!(verdict_of(&c(0.01, 0.2), true), Verdict::Regressed);
        assert_eq!(verdict_of(&c(0.01, 0.2), false), Verdict::Improved);
        assert_eq!(verdict_of(&c(-0.2, -0.01), false), Verdict::Regressed);
        assert_eq!(
            verdict_of(&c(-0.1, 0.1), true),
            Verdict::NoSignificantChange
        );
        assert_eq!(
            verdict_of(&c(-0.1, f64::INFINITY), true),
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict_of(&c(0.05, f64::INFINITY), true),
            Verdict::Regressed
        );
        let none = Change {
            point: 0.1,
            interval: None,
        };
        assert_eq!(verdict_of(&none, true), Verdict::Inconclusive);
    }
}
