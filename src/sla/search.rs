//! The SLA search, step for step as evalscope 1.14.1's `SLAAutoTuner` walks it: per criterion group,
//! a constraint search (double from the start value until a probe fails — or halve until one passes —
//! then bisect for the largest passing value), or, for a single `max`/`min` metric, the optimisation
//! walk (local slope, doubling steps, bisection on adjacent values, plateau walks). Probes are cached
//! by value, so a value is never run twice. Every log line evalscope prints is printed here with the
//! same text and kept in [`Tuner::transcript`].
//!
//! The runs themselves come from a [`ProbeRunner`]: the real runner in [`super::driver`], or recorded
//! results in the golden tests.

use std::collections::BTreeSet;

use anyhow::Result;

use super::probe::{Probe, RunOutcome};
use crate::plan::sla::criterion::{Criterion, Op};
use crate::plan::sla::{Group, SlaPlan, Variable};
use crate::text::format::{unit_for_key, Unit};

/// Where a probe's runs come from.
#[allow(async_fn_in_trait)]
pub trait ProbeRunner {
    /// Runs iteration `i` (0-based) of `value`.
    async fn run(&mut self, value: i64, iteration: usize) -> Result<RunOutcome>;
    /// The pause between two runs of one value (`--sleep-interval`).
    async fn pause(&mut self);
    /// The run was interrupted: stop searching.
    fn stopped(&self) -> bool {
        false
    }
}

/// What a search decided for one group (evalscope's `SLASelection`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// `metric target` pairs (`p99_ttft`, `<= 500 ms`) or (`tps`, `max`).
    pub criteria: Vec<(String, String)>,
    /// `constraint`, `max` or `min`.
    pub mode: &'static str,
    /// The chosen value, if any.
    pub selected: Option<i64>,
    /// The optimised metric's best value.
    pub observed_metric: Option<f64>,
    /// Why.
    pub reason: String,
    /// With `--sla-confidence`: the interval `(largest confident pass, smallest confident fail)`.
    pub interval: Option<(Option<i64>, Option<i64>)>,
}

impl Selection {
    /// `best_observed` or `none`.
    pub fn status(&self) -> &'static str {
        if self.selected.is_some() {
            "best_observed"
        } else {
            "none"
        }
    }
}

/// The state of one whole auto-tune.
pub struct Tuner<'a, R: ProbeRunner> {
    pub(crate) plan: &'a SlaPlan,
    pub(crate) runner: R,
    /// Probes in the order first run.
    pub probes: Vec<Probe>,
    /// One selection per group (or one for the objective).
    pub selections: Vec<Selection>,
    /// Every log line of the search, in order (what evalscope logs, without the logger prefix).
    pub transcript: Vec<String>,
    pub(crate) metric_names: BTreeSet<String>,
}

/// `format_perf_value(value, field)`: the metric's display form (`123.46 tok/s`).
pub(crate) fn display_value(metric: &str, value: f64) -> String {
    match crate::plan::sla::criterion::metric(metric) {
        Some(m) => unit_for_key(m.field).fmt_with_unit(value),
        None => Unit::Raw.fmt(value),
    }
}

impl<'a, R: ProbeRunner> Tuner<'a, R> {
    /// A tuner for `plan` drawing runs from `runner`.
    pub fn new(plan: &'a SlaPlan, runner: R) -> Self {
        let metric_names = plan
            .groups
            .iter()
            .flat_map(|g| g.iter().map(|(n, _)| n.clone()))
            .collect();
        Tuner {
            plan,
            runner,
            probes: Vec::new(),
            selections: Vec::new(),
            transcript: Vec::new(),
            metric_names,
        }
    }

    pub(crate) fn info(&mut self, msg: String) {
        tracing::info!("{msg}");
        self.transcript.push(msg);
    }

    pub(crate) fn warn(&mut self, msg: String) {
        tracing::warn!("{msg}");
        self.transcript.push(msg);
    }

    fn var(&self) -> &'static str {
        self.plan.variable.name()
    }

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

    /// The probe of `value`, run now unless cached (evalscope's `_get_probe`).
    pub(crate) async fn probe(&mut self, value: i64) -> Result<usize> {
        if let Some(i) = self.probes.iter().position(|p| p.value == value) {
            return Ok(i);
        }
        let var = self.var();
        let runs = self.plan.num_runs;
        let mut probe = Probe::new(value, Vec::new(), &self.metric_names);
        for i in 0..runs {
            if self.runner.stopped() {
                anyhow::bail!("interrupted");
            }
            self.info(format!(
                "Running {var}={value}, iteration {}/{runs}...",
                i + 1
            ));
            let run = self.runner.run(value, i).await?;
            probe.add_run(run, &self.metric_names);
            if i + 1 < runs {
                self.info(format!(
                    "Sleeping {} seconds before next run...",
                    self.plan.sleep_interval_s
                ));
                self.runner.pause().await;
            }
        }
        self.probes.push(probe);
        Ok(self.probes.len() - 1)
    }

    /// Runs one more iteration of a cached probe (the confidence search).
    pub(crate) async fn extend_probe(&mut self, index: usize) -> Result<()> {
        let (value, i) = (self.probes[index].value, self.probes[index].runs.len());
        let var = self.var();
        self.info(format!("Running {var}={value}, iteration {}...", i + 1));
        self.runner.pause().await;
        let run = self.runner.run(value, i).await?;
        let names = self.metric_names.clone();
        self.probes[index].add_run(run, &names);
        Ok(())
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

    /// The optimisation objective at `value`: `None` when a request failed or the metric is missing.
    async fn score(&mut self, value: i64, metric: &str) -> Result<Option<f64>> {
        let i = self.probe(value).await?;
        let p = &self.probes[i];
        Ok(if p.request_gate_passed {
            p.metric(metric)
        } else {
            None
        })
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

    pub(crate) async fn score_of(&mut self, value: i64, metric: &str) -> Result<Option<f64>> {
        self.score(value, metric).await
    }

    pub(crate) fn variable(&self) -> Variable {
        self.plan.variable
    }
}

/// `key target, key target` (evalscope's `criteria_desc`).
pub(crate) fn criteria_desc(group: &Group) -> String {
    group
        .iter()
        .map(|(k, c)| format!("{k} {}", c.text()))
        .collect::<Vec<_>>()
        .join(", ")
}
