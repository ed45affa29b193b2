//! Runs an SLA auto-tune ([`crate::sla`]) for real: every probe run goes through the normal run machinery
//! ([`crate::runner::run_single`]) into `<root>/sla_tuning/sla_<var>_<value>_run_<i>/` (its own
//! `benchmark_args.json`, database and summaries, as evalscope writes them), with `--number` =
//! `max(1, round(value × multiplier))`, `--dataset-offset` advanced by each run's number, and for
//! `--sla-variable rate` the concurrency cap `--sla-fixed-parallel`. At the end: `sla_summary.json`,
//! `performance_summary.txt` over the averaged probes, and the `SLA Auto-tune Summary` tables. As in
//! evalscope, no HTML report.

use anyhow::{Context, Result};

use super::{run_single, SweepContext};
use crate::export::report::{performance_summary, ReportInfo};
use crate::plan::sla::{SlaPlan, Variable};
use crate::plan::{LoadMode, RunSpec};
use crate::sla::probe::RunOutcome;
use crate::sla::report;
use crate::sla::search::{ProbeRunner, Tuner};

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
        let (parallel, rate) = match (self.sla.variable, plan.mode) {
            (Variable::Parallel, _) => (value, -1.0),
            (Variable::Rate, LoadMode::Closed) => (self.sla.fixed_parallel, value as f64),
            (Variable::Rate, LoadMode::Open) => (-1, value as f64),
        };
        RunSpec {
            number,
            parallel,
            rate,
            warmup: crate::plan::warmup_requests(plan.warmup_num, number),
            dir_name: format!("sla_tuning/{}", self.sla.run_dir_name(value, iteration)),
            dataset_offset: self.dataset_offset,
        }
    }
}

impl ProbeRunner for RealRunner<'_, '_> {
    async fn run(&mut self, value: i64, iteration: usize) -> Result<RunOutcome> {
        let spec = self.spec(value, iteration);
        let sockets = spec.parallel.clamp(1, spec.total().max(1) as i64) as u64;
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
    tuner.tune().await?;
    finish(&mut tuner, &ctx.plan.output_root, info)
}

/// Writes `sla_summary.json` and `performance_summary.txt` and prints the summary tables.
pub fn finish<R: ProbeRunner>(
    tuner: &mut Tuner<'_, R>,
    root: &std::path::Path,
    info: &ReportInfo,
) -> Result<()> {
    let path = root.join("sla_summary.json");
    let json = report::summary_json(tuner.plan, &tuner.probes, &tuner.selections);
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    tuner.info(format!("SLA summary saved to: {}", path.display()));
    let runs = report::report_runs(&tuner.probes);
    let text = performance_summary(info, &runs);
    if !text.is_empty() {
        println!("{text}");
        let path = root.join("performance_summary.txt");
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        tuner.info(format!("Performance summary saved to: {}", path.display()));
    }
    let tables = report::tables(&tuner.probes, &tuner.selections);
    tuner.info(format!("SLA Auto-tune Summary:\n{tables}"));
    if let Some(level) = tuner.plan.confidence {
        let table = report::interval_table(&tuner.selections, level);
        tuner.info(table);
    }
    Ok(())
}
