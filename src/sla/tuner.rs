//! The state of an SLA auto-tune and what every walk shares: the [`ProbeRunner`] the runs come from,
//! the [`Tuner`] with its probes (each value run once, then cached), selections and transcript, and the
//! names evalscope prints. The walks themselves are [`super::search`] (the constraint search),
//! [`super::optimize`] (the objective walk) and [`super::confidence`].

use std::collections::BTreeSet;

use anyhow::Result;

use super::probe::{Probe, RunOutcome};
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

    pub(super) fn var(&self) -> &'static str {
        self.plan.variable.name()
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
