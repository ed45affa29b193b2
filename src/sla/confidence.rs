//! `--sla-confidence`: the limit as an interval instead of one point from noisy runs.
//!
//! Each probed value is run at least `max(2, --sla-num-runs)` times; after each run, every SLA metric's
//! runs give a two-sided Student-t confidence interval of their mean at the stated level. The value
//! **passes** when every metric's interval lies wholly on the passing side of its threshold, **fails**
//! when a run lost a request or some metric's interval lies wholly on the failing side, and otherwise
//! is run again, until `--sla-max-runs` runs are spent (then it stays **undecided**). The search then
//! finds the largest value that passes (doubling, then bisection, as evalscope's search) and the
//! smallest value above it that fails; the true limit lies between them with (about) that confidence.

use anyhow::Result;

use super::tuner::{criteria_desc, ProbeRunner, Tuner};
use crate::plan::sla::criterion::{Criterion, Op};
use crate::plan::sla::Group;

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The Student-t quantile with `df` degrees of freedom: exact for 1 and 2, the Cornish–Fisher
/// expansion (to ν⁻⁴) above.
pub fn t_quantile(p: f64, df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1 => (std::f64::consts::PI * (p - 0.5)).tan(),
        2 => (2.0 * p - 1.0) * (2.0 / (4.0 * p * (1.0 - p))).sqrt(),
        _ => {
            let z = normal_quantile(p);
            let v = df as f64;
            let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
            z + (z3 + z) / (4.0 * v)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
                + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z)
                    / (92160.0 * v.powi(4))
        }
    }
}

/// Mean, sample standard deviation and the two-sided confidence interval of the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub stdev: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

/// The spread of `values` at confidence `level` (an unbounded interval for fewer than two values).
pub fn spread(values: &[f64], level: f64) -> Spread {
    let n = values.len();
    if n == 0 {
        return Spread {
            mean: f64::NAN,
            stdev: f64::NAN,
            low: f64::NAN,
            high: f64::NAN,
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Spread {
            mean,
            stdev: 0.0,
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
        };
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let stdev = var.sqrt();
    let half = t_quantile(0.5 + level / 2.0, n - 1) * stdev / (n as f64).sqrt();
    Spread {
        mean,
        stdev,
        low: mean - half,
        high: mean + half,
    }
}

/// A probe's verdict with confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Passes with the stated confidence.
    Pass,
    /// Fails with the stated confidence (or lost a request).
    Fail,
    /// Neither, yet.
    Undecided,
}

/// The verdict of one criterion over its runs' values.
pub fn decide(values: &[f64], c: &Criterion, level: f64) -> Decision {
    let s = spread(values, level);
    if s.mean.is_nan() {
        return Decision::Fail;
    }
    let (all_pass, all_fail) = match c.op {
        Op::Le => (s.high <= c.target, s.low > c.target),
        Op::Lt => (s.high < c.target, s.low >= c.target),
        Op::Ge => (s.low >= c.target, s.high < c.target),
        Op::Gt => (s.low > c.target, s.high <= c.target),
        Op::Max | Op::Min => (true, false),
    };
    if all_pass {
        Decision::Pass
    } else if all_fail {
        Decision::Fail
    } else {
        Decision::Undecided
    }
}

impl<R: ProbeRunner> Tuner<'_, R> {
    /// The verdict of `value` for `group`, running it again until decided or the budget is spent.
    async fn confident(&mut self, value: i64, group: &Group) -> Result<Decision> {
        let level = self.plan.confidence.unwrap_or(0.95);
        let i = self.probe(value).await?;
        let min_runs = self.plan.num_runs.max(2);
        loop {
            let p = &self.probes[i];
            let runs = p.runs.len();
            let decision = if !p.request_gate_passed {
                Decision::Fail
            } else if runs < min_runs {
                Decision::Undecided
            } else {
                let verdicts: Vec<Decision> = group
                    .iter()
                    .map(|(name, c)| decide(&p.run_values(name), c, level))
                    .collect();
                if verdicts.contains(&Decision::Fail) {
                    Decision::Fail
                } else if verdicts.iter().all(|d| *d == Decision::Pass) {
                    Decision::Pass
                } else {
                    Decision::Undecided
                }
            };
            if decision != Decision::Undecided
                || runs >= self.plan.max_runs
                || self.runner.stopped()
            {
                let var = self.variable().name();
                self.info(format!(
                    "[{var}={value}] Confidence check after {runs} run(s): {}",
                    match decision {
                        Decision::Pass => "PASSED",
                        Decision::Fail => "FAILED",
                        Decision::Undecided => "UNDECIDED",
                    }
                ));
                return Ok(decision);
            }
            self.extend_probe(i).await?;
        }
    }

    /// The interval search for one group (`--sla-confidence`).
    pub(crate) async fn constraint_with_confidence(
        &mut self,
        start: i64,
        group: &Group,
    ) -> Result<()> {
        let (lo_bound, hi_bound) = (self.plan.lower, self.plan.upper);
        // The largest confident pass: double up from a pass, or halve down to one, then bisect.
        let (mut pass, mut not_pass);
        if self.confident(start, group).await? == Decision::Pass {
            pass = start;
            not_pass = None;
            let mut v = (start * 2).min(hi_bound);
            while v > pass {
                if self.confident(v, group).await? == Decision::Pass {
                    pass = v;
                    v = (v * 2).min(hi_bound);
                } else {
                    not_pass = Some(v);
                    break;
                }
            }
        } else {
            not_pass = Some(start);
            let mut found = None;
            let mut v = start.div_euclid(2).max(lo_bound);
            loop {
                if v < start {
                    if self.confident(v, group).await? == Decision::Pass {
                        found = Some(v);
                        break;
                    }
                    not_pass = Some(v);
                }
                if v == lo_bound {
                    break;
                }
                v = v.div_euclid(2).max(lo_bound);
            }
            let Some(p) = found else {
                let desc = criteria_desc(group);
                self.warn(format!(
                    "Even {}={lo_bound} does not pass {desc} with confidence.",
                    self.variable().name()
                ));
                let fail = self.smallest_fail(lo_bound - 1, group).await?;
                self.select(
                    group,
                    None,
                    "No value passes with confidence".into(),
                    Some((None, fail)),
                );
                return Ok(());
            };
            pass = p;
        }
        if let Some(mut right) = not_pass {
            let mut left = pass;
            while right - left > 1 {
                let mid = (left + right).div_euclid(2);
                if self.confident(mid, group).await? == Decision::Pass {
                    left = mid;
                } else {
                    right = mid;
                }
            }
            pass = left;
        }
        let fail = self.smallest_fail(pass, group).await?;
        let var = self.variable().name();
        self.info(format!(
            "SLA interval for {}: {var} passes up to {pass}, fails from {}",
            criteria_desc(group),
            fail.map_or("(none found)".to_string(), |f| f.to_string())
        ));
        self.select(
            group,
            Some(pass),
            "Largest value that passes with confidence".into(),
            Some((Some(pass), fail)),
        );
        Ok(())
    }

    /// The smallest value above `after` that fails with confidence (doubling, then bisection).
    async fn smallest_fail(&mut self, after: i64, group: &Group) -> Result<Option<i64>> {
        let hi_bound = self.plan.upper;
        let mut below = after;
        let mut step = 1;
        let fail = loop {
            let v = (after + step).min(hi_bound);
            if v <= below {
                return Ok(None);
            }
            if self.confident(v, group).await? == Decision::Fail {
                break v;
            }
            below = v;
            if v == hi_bound {
                return Ok(None);
            }
            step *= 2;
        };
        let (mut left, mut right) = (below, fail);
        while right - left > 1 {
            let mid = (left + right).div_euclid(2);
            if self.confident(mid, group).await? == Decision::Fail {
                right = mid;
            } else {
                left = mid;
            }
        }
        Ok(Some(right))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_tables() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((t_quantile(0.975, 1) - 12.7062).abs() < 1e-3);
        assert!((t_quantile(0.975, 2) - 4.3027).abs() < 1e-3);
        assert!((t_quantile(0.975, 4) - 2.7764).abs() < 0.01);
        assert!((t_quantile(0.975, 9) - 2.2622).abs() < 0.005);
        assert!((t_quantile(0.95, 5) - 2.0150).abs() < 0.005);
    }

    #[test]
    fn decisions_need_the_whole_interval_on_one_side() {
        let c = crate::plan::sla::criterion::parse("<=100", "TTFT (ms)").unwrap();
        assert_eq!(decide(&[50.0, 52.0, 51.0], &c, 0.95), Decision::Pass);
        assert_eq!(decide(&[150.0, 152.0, 151.0], &c, 0.95), Decision::Fail);
        assert_eq!(decide(&[90.0, 110.0, 100.0], &c, 0.95), Decision::Undecided);
        assert_eq!(decide(&[50.0], &c, 0.95), Decision::Undecided);
    }
}
