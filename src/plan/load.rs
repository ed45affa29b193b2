//! The load side of the plan: closed or open loop, the runs of the sweep with their warmup and dataset
//! offsets, and the soft time limit.

use std::num::NonZeroUsize;

use super::*;

/// The load mode and the runs of the sweep, each pair `(--number, --parallel/--rate)` distinct.
pub(super) fn runs(cli: &Cli) -> Result<(LoadMode, Vec<RunSpec>), UsageError> {
    let mode = if cli.open_loop {
        LoadMode::Open
    } else {
        LoadMode::Closed
    };
    if cli.number.contains(&0) {
        return usage("--number: every value must be at least 1");
    }
    let mut runs = match mode {
        LoadMode::Closed => closed_runs(cli)?,
        LoadMode::Open => open_runs(cli)?,
    };
    let mut offset = cli.dataset_offset;
    for r in &mut runs {
        r.dataset_offset = offset;
        offset = offset.wrapping_add(r.number);
    }
    for (i, r) in runs.iter().enumerate() {
        if runs[..i]
            .iter()
            .any(|o| (o.number, o.load) == (r.number, r.load))
        {
            return usage(format!(
                "the sweep repeats the run {}: each (--number, --parallel/--rate) pair must be distinct",
                r.as_flags()
            ));
        }
    }
    Ok((mode, runs))
}

fn closed_runs(cli: &Cli) -> Result<Vec<RunSpec>, UsageError> {
    if cli.number.len() != cli.parallel.len() {
        return usage(format!(
            "--number and --parallel must have the same length: --number has {} value(s), --parallel has {} (one run per pair)",
            cli.number.len(),
            cli.parallel.len()
        ));
    }
    if let Some(p) = cli.parallel.iter().find(|p| **p <= 0) {
        return usage(format!(
            "--parallel {p}: every value must be greater than 0"
        ));
    }
    // evalscope's default -1 means "not paced".
    let typed = cli.rate[0];
    let pacing = Rate::new(typed);
    if pacing.is_none() && typed != -1.0 {
        return usage(format!(
            "--rate {typed}: must be a finite number of requests per second > 0, or -1 for no pacing"
        ));
    }
    Ok(cli
        .number
        .iter()
        .zip(&cli.parallel)
        .map(|(&number, &parallel)| RunSpec {
            number,
            load: Load::Closed {
                parallel: NonZeroUsize::new(parallel as usize).expect("checked > 0"),
                pacing,
            },
            warmup: warmup_count(cli.warmup_num.unwrap_or(0.0), number),
            dataset_offset: 0,
            role: RunRole::Sweep,
        })
        .collect())
}

fn open_runs(cli: &Cli) -> Result<Vec<RunSpec>, UsageError> {
    if cli.number.len() != cli.rate.len() {
        return usage(format!(
            "--number and --rate must have the same length in --open-loop: --number has {} value(s), --rate has {}",
            cli.number.len(),
            cli.rate.len()
        ));
    }
    // A trace brings its own arrival times (evalscope's `provides_arrival_schedule`).
    let own_schedule = cli.dataset.replays_trace();
    if let Some(r) = cli
        .rate
        .iter()
        .find(|r| !own_schedule && (r.is_nan() || **r <= 0.0 || !r.is_finite()))
    {
        return usage(format!(
            "--rate {r}: --open-loop needs every rate greater than 0 (requests per second)"
        ));
    }
    Ok(cli
        .number
        .iter()
        .zip(&cli.rate)
        .map(|(&number, &rate)| RunSpec {
            number,
            load: match Rate::new(rate) {
                Some(rate) => Load::Open { rate },
                None => Load::Trace {
                    rate_as_typed: rate,
                    number_as_typed: number,
                },
            },
            warmup: warmup_count(cli.warmup_num.unwrap_or(0.0), number),
            dataset_offset: 0,
            role: RunRole::Sweep,
        })
        .collect())
}

/// A trace brings its own arrival times (its runs are fitted to it in [`super::trace`]); any other
/// workload needs a rate for every open-loop run.
pub(super) fn check_rates(runs: &[RunSpec], workload: &Workload) -> Result<(), UsageError> {
    let own_schedule = matches!(workload, Workload::WorkloadTrace(_) | Workload::Replay(_));
    match runs.iter().find(|r| matches!(r.load, Load::Trace { .. })) {
        Some(r) if !own_schedule => usage(format!(
            "--rate {}: --open-loop needs every rate greater than 0 (requests per second)",
            r.load.rate_as_written()
        )),
        _ => Ok(()),
    }
}

/// `--warmup-num` must be a number; `--duration` a number of seconds > 0.
pub(super) fn duration(cli: &Cli) -> Result<Option<Duration>, UsageError> {
    if let Some(w) = cli.warmup_num.filter(|w| !w.is_finite()) {
        return usage(format!(
            "--warmup-num {w}: must be a number (≥ 1: a count, between 0 and 1: a fraction of --number, ≤ 0: none)"
        ));
    }
    match cli.duration {
        None => Ok(None),
        Some(d) if d > 0.0 && d.is_finite() => Ok(Some(Duration::from_secs_f64(d))),
        Some(d) => usage(format!("--duration {d}: must be a number of seconds > 0")),
    }
}
