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

use crate::stats::spread;

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
    fn decisions_need_the_whole_interval_on_one_side() {
        let c = crate::plan::sla::criterion::parse("<=100", "TTFT (ms)").unwrap();
        assert_eq!(decide(&[50.0, 52.0, 51.0], &c, 0.95), Decision::Pass);
        assert_eq!(decide(&[150.0, 152.0, 151.0], &c, 0.95), Decision::Fail);
        assert_eq!(decide(&[90.0, 110.0, 100.0], &c, 0.95), Decision::Undecided);
        assert_eq!(decide(&[50.0], &c, 0.95), Decision::Undecided);
    }
}
