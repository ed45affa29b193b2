//! Runs an SLA auto-tune ([`crate::sla`]) for real: every probe run goes through the normal run machinery
//! ([`crate::runner::run_single`]) into `<root>/sla_tuning/sla_<var>_<value>_run_<i>/` (its own
//! arguments, database and summaries, as evalscope writes them), with `--number` =
//! `max(1, round(value × multiplier))`, `--dataset-offset` advanced by each run's number, and for
//! `--sla-variable rate` the concurrency cap `--sla-fixed-parallel`. At the end: `sla_summary.json`,
//! the end-of-sweep text report over the averaged probes, and the `SLA Auto-tune Summary` tables. As in
//! evalscope, no HTML report.

use std::num::NonZeroUsize;

use anyhow::Result;

use super::context::SweepContext;
use super::single::run_single;
use crate::export::report::{performance_summary, ReportInfo};
use crate::plan::sla::{SlaPlan, Variable};
use crate::plan::{Load, LoadMode, Rate, RunRole, RunSpec};
use crate::run_folder::RunRoot;
use crate::sla::probe::RunOutcome;
use crate::sla::report;
use crate::sla::tuner::{ProbeRunner, Tuner};

/// Probe runs through [`run_single`].
struct RealRunner<'c, 'p> {
    ctx: &'c SweepContext<'p>,
    sla: &'c SlaPlan,
    dataset_offset: u64,
    run_index: usize,
    interrupted: bool,
    /// `--enable-progress-tracker`: lent to each probe run.
    tracker: Option<crate::runner::ProgressTracker>,
}

impl RealRunner<'_, '_> {
    fn spec(&self, value: i64, iteration: usize) -> RunSpec {
        let plan = self.ctx.plan;
        let number = self.sla.number_for(value);
        // The search's values and --sla-fixed-parallel are whole numbers ≥ 1 (--sla-lower-bound ≥ 1).
        let slots = |v: i64| NonZeroUsize::new(v.max(1) as usize).expect("at least 1");
        let rate = Rate::new(value.max(1) as f64).expect("at least 1 req/s");
        let load = match (self.sla.variable, plan.mode) {
            (Variable::Parallel, _) => Load::Closed {
                parallel: slots(value),
                pacing: None,
            },
            (Variable::Rate, LoadMode::Closed) => Load::Closed {
                parallel: slots(self.sla.fixed_parallel),
                pacing: Some(rate),
            },
            (Variable::Rate, LoadMode::Open) => Load::Open { rate },
        };
        RunSpec {
            number,
            load,
            warmup: crate::plan::warmup_requests(plan.warmup_num, number),
            dataset_offset: self.dataset_offset,
            role: RunRole::SlaProbe {
                variable: self.sla.variable,
                value,
                iteration,
            },
        }
    }
}

impl ProbeRunner for RealRunner<'_, '_> {
    async fn run(&mut self, value: i64, iteration: usize) -> Result<RunOutcome> {
        let spec = self.spec(value, iteration);
        let sockets = spec
            .load
            .parallel()
            .map_or(1, |p| p.get())
            .min(spec.total().max(1) as usize) as u64;
        if let Err(e) =
            crate::resources::ensure_file_limit(sockets * 2 + crate::resources::FD_HEADROOM)
        {
            tracing::warn!("{}={value}: {e}", self.sla.variable.name());
        }
        self.dataset_offset = self.dataset_offset.wrapping_add(spec.number);
        let result = run_single(self.ctx, &spec, self.run_index, &mut self.tracker).await?;
        self.run_index += 1;
        self.interrupted |= result.interrupted;
        Ok(RunOutcome::from_summary_json(
            &result.summary.to_json_string(),
            result.percentiles,
        ))
    }

    async fn pause(&mut self) {
        let pause = self.ctx.plan.sleep_interval;
        if !pause.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.ctx.shutdown.stopped() => {}
            }
        }
    }

    fn stopped(&self) -> bool {
        self.interrupted || self.ctx.shutdown.stopping()
    }
}

/// Runs the whole auto-tune and writes its files under the run root.
pub async fn run(
    ctx: &SweepContext<'_>,
    sla: &SlaPlan,
    info: &ReportInfo,
    tracker: Option<crate::runner::ProgressTracker>,
) -> Result<()> {
    let runner = RealRunner {
        ctx,
        sla,
        dataset_offset: ctx.plan.runs.first().map_or(0, |r| r.dataset_offset),
        run_index: 0,
        interrupted: false,
        tracker,
    };
    let mut tuner = Tuner::new(sla, runner);
    let tuned = tuner.tune().await;
    ctx.monitors.sweep_done();
    tuned?;
    finish(&mut tuner, &ctx.root, info)
}

/// Writes `sla_summary.json` and the end-of-sweep text report and prints the summary tables.
pub fn finish<R: ProbeRunner>(
    tuner: &mut Tuner<'_, R>,
    root: &RunRoot,
    info: &ReportInfo,
) -> Result<()> {
    let json = report::summary_json(tuner.plan, &tuner.probes, &tuner.selections);
    root.write_sla_summary(&json)?;
    tuner.info(format!(
        "SLA summary saved to: {}",
        root.sla_summary().display()
    ));
    let runs = report::report_runs(&tuner.probes);
    let text = performance_summary(info, &runs);
    if !text.is_empty() {
        println!("{text}");
        root.write_performance_summary(&text)?;
        tuner.info(format!(
            "Performance summary saved to: {}",
            root.performance_summary().display()
        ));
    }
    let tables = report::tables(&tuner.probes, &tuner.selections);
    tuner.info(format!("SLA Auto-tune Summary:\n{tables}"));
    if let Some(level) = tuner.plan.confidence {
        let table = report::interval_table(&tuner.selections, level);
        tuner.info(table);
    }
    Ok(())
}
