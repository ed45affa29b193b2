//! The SLA search, step for step as evalscope 1.14.1's `SLAAutoTuner` walks it: per criterion group,
//! a constraint search (double from the start value until a probe fails — or halve until one passes —
//! then bisect for the largest passing value), or, for a single `max`/`min` metric, the optimisation
//! walk ([`super::optimize`]). Every log line evalscope prints is printed with the same text and kept in
//! [`Tuner::transcript`].
//!
//! The runs themselves come from a [`ProbeRunner`]: the real runner in `runner::sla`, or recorded
//! results in the golden tests.

use anyhow::Result;

use super::tuner::{criteria_desc, display_value, ProbeRunner, Selection, Tuner};
use crate::plan::sla::criterion::{Criterion, Op};
use crate::plan::sla::Group;

impl<R: ProbeRunner> Tuner<'_, R> {
    /// The whole search (evalscope's `tune`), then the per-probe group verdicts. A signal ends the search
    /// early; the probes finished so far are kept.
    pub async fn tune(&mut self) -> Result<()> {
        let outcome = self.search().await;
        if outcome.is_err() && self.runner.stopped() {
            self.warn("SLA search interrupted: reporting the values probed so far".into());
            self.finish_groups();
            return Ok(());
        }
        outcome
    }

    async fn search(&mut self) -> Result<()> {
        let var = self.var();
        self.info(format!("Starting SLA Auto-tune for {var}"));
        self.info(format!(
            "SLA Range: [{}, {}]",
            self.plan.lower, self.plan.upper
        ));
        self.info(format!("SLA Params: {}", self.plan.params_repr));
        let start = self.plan.start_value();
        let groups = self.plan.groups.clone();
        if let [group] = groups.as_slice() {
            if let [(metric, c)] = group.as_slice() {
                if c.is_objective() {
                    self.optimize(start, metric, c.op).await?;
                    self.finish_groups();
                    return Ok(());
                }
            }
        }
        for group in &groups {
            let desc: Vec<String> = group
                .iter()
                .map(|(k, c)| format!("{k} {}", c.text()))
                .collect();
            self.info(format!(
                "Auto-tuning for criteria group: {}",
                desc.join(" AND ")
            ));
            if self.plan.confidence.is_some() {
                self.constraint_with_confidence(start, group).await?;
            } else {
                self.constraint(start, group).await?;
            }
            if self.runner.stopped() {
                break;
            }
        }
        self.finish_groups();
        Ok(())
    }

    fn finish_groups(&mut self) {
        let groups = self.plan.groups.clone();
        for p in &mut self.probes {
            p.group_passes = groups.iter().map(|g| p.passes(g)).collect();
        }
    }

    /// evalscope's `_check_probe`: the request gate, then every criterion, logging each check.
    async fn check(&mut self, value: i64, group: &Group) -> Result<bool> {
        let i = self.probe(value).await?;
        let selector = format!("{}={value}", self.var());
        if !self.probes[i].request_gate_passed {
            let reasons = self.probes[i].reasons.join("; ");
            self.warn(format!("[{selector}] SLA Check: {reasons} | FAILED"));
            return Ok(false);
        }
        let mut passed = true;
        for (metric, c) in group {
            let Some(v) = self.probes[i].metric(metric) else {
                self.warn(format!(
                    "[{selector}] Metric {metric} not found in results."
                ));
                passed = false;
                continue;
            };
            let ok = c.validate(v);
            let field = crate::plan::sla::criterion::metric(metric).map_or("", |m| m.field);
            self.info(format!(
                "[{selector}] SLA Rule 1 Check: {metric} = {} | Expect {} | {}",
                crate::plan::sla::criterion::format_operand(v, field),
                c.cond(),
                if ok { "PASSED" } else { "FAILED" }
            ));
            passed &= ok;
        }
        Ok(passed)
    }

    /// evalscope's `_tune_constraint` for one group.
    async fn constraint(&mut self, start: i64, group: &Group) -> Result<()> {
        let (lo_bound, hi_bound) = (self.plan.lower, self.plan.upper);
        let mut best_observed: Option<i64> = None;
        macro_rules! check {
            ($v:expr) => {{
                let v = $v;
                let ok = self.check(v, group).await?;
                if ok {
                    best_observed = Some(best_observed.map_or(v, |b: i64| b.max(v)));
                }
                ok
            }};
        }
        let passed = check!(start);
        let (mut lower, mut upper);
        if passed {
            lower = start;
            self.info("Initial run passed. Finding upper bound...".into());
            upper = (start * 2).min(hi_bound);
            while upper <= hi_bound {
                self.info(format!("Testing upper bound: {upper}"));
                if !check!(upper) {
                    self.info(format!("Found upper bound violation at {upper}"));
                    break;
                }
                lower = upper;
                if upper == hi_bound {
                    self.info(format!("Reached upper bound limit: {hi_bound}"));
                    break;
                }
                upper = (upper * 2).min(hi_bound);
            }
        } else {
            self.info("Initial run failed. Finding lower bound...".into());
            upper = start;
            lower = (start.div_euclid(2)).max(lo_bound);
            let mut found = false;
            while lower >= lo_bound {
                self.info(format!("Testing lower bound: {lower}"));
                if check!(lower) {
                    self.info(format!("Found valid lower bound at {lower}"));
                    found = true;
                    break;
                }
                upper = lower;
                if lower == lo_bound {
                    break;
                }
                lower = (lower.div_euclid(2)).max(lo_bound);
            }
            if !found {
                let desc = criteria_desc(group);
                self.warn(format!(
                    "Even {}={lo_bound} failed SLA for {desc}.",
                    self.var()
                ));
                self.select(
                    group,
                    None,
                    format!("Failed at lower bound ({lo_bound})"),
                    None,
                );
                return Ok(());
            }
        }
        self.info(format!("Binary search in [{lower}, {upper}]"));
        let mut best = lower;
        let (mut left, mut right) = (lower + 1, upper - 1);
        if check!(upper) {
            best = upper;
            left = right + 1;
        }
        while left <= right {
            let mid = (left + right).div_euclid(2);
            self.info(format!("Binary search checking: {mid}"));
            if check!(mid) {
                best = mid;
                left = mid + 1;
            } else {
                right = mid - 1;
            }
        }
        let best = best_observed.map_or(best, |b| best.max(b));
        self.info(format!(
            "SLA Auto-tune finished. Criteria: {}. Best observed {}: {best}",
            criteria_desc(group),
            self.var()
        ));
        self.select(
            group,
            Some(best),
            "Satisfied at the selected tested pressure".into(),
            None,
        );
        Ok(())
    }

    pub(crate) fn select(
        &mut self,
        group: &Group,
        selected: Option<i64>,
        reason: String,
        interval: Option<(Option<i64>, Option<i64>)>,
    ) {
        self.selections.push(Selection {
            criteria: group.iter().map(|(k, c)| (k.clone(), c.text())).collect(),
            mode: "constraint",
            selected,
            observed_metric: None,
            reason,
            interval,
        });
    }

    /// evalscope's `_tune_optimization`.
    async fn optimize(&mut self, start: i64, metric: &str, op: Op) -> Result<()> {
        let mode = if op == Op::Max { "max" } else { "min" };
        self.info(format!("Optimization mode: {mode} for {metric}"));
        let bracket = super::optimize::bracket(self, start, metric, op).await?;
        if let Some((left, right)) = bracket {
            super::optimize::bisect(self, left, right, metric, op).await?;
        }
        let group: Group = vec![(
            metric.to_string(),
            Criterion {
                op,
                target: 0.0,
                display: String::new(),
            },
        )];
        let mut best: Option<(i64, f64)> = None;
        for p in &self.probes {
            if !p.passes(&group) {
                continue;
            }
            let Some(v) = p.metric(metric) else { continue };
            let better = match best {
                None => true,
                Some((bv, bm)) => {
                    let key = |val: i64, m: f64| if op == Op::Max { (-m, val) } else { (m, val) };
                    let (a, b) = (key(p.value, v), key(bv, bm));
                    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
                }
            };
            if better {
                best = Some((p.value, v));
            }
        }
        let reason = match best {
            Some((_, m)) => format!("Best observed {metric}: {}", display_value(metric, m)),
            None => "No run passed the 100% success gate with the required metric".into(),
        };
        self.selections.push(Selection {
            criteria: vec![(metric.to_string(), mode.to_string())],
            mode,
            selected: best.map(|b| b.0),
            observed_metric: best.map(|b| b.1),
            reason,
            interval: None,
        });
        Ok(())
    }
}
