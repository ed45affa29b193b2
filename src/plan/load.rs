//! The load side of the plan: closed or open loop, the runs of the sweep with their warmup and dataset
//! offsets, and the soft time limit.

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
        if runs[..i].iter().any(|o| o.dir_name == r.dir_name) {
            return usage(format!(
                "the sweep repeats the run {}: each (--number, --parallel/--rate) pair must be distinct",
                r.dir_name
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
    let rate = cli.rate[0];
    if !rate.is_finite() || (rate <= 0.0 && rate != -1.0) {
        return usage(format!(
            "--rate {rate}: must be a finite number of requests per second > 0, or -1 for no pacing"
        ));
    }
    Ok(cli
        .number
        .iter()
        .zip(&cli.parallel)
        .map(|(&number, &parallel)| RunSpec {
            number,
            parallel,
            rate,
            warmup: warmup_count(cli.warmup_num.unwrap_or(0.0), number),
            dir_name: format!("parallel_{parallel}_number_{number}"),
            dataset_offset: 0,
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
            parallel: -1,
            rate,
            warmup: warmup_count(cli.warmup_num.unwrap_or(0.0), number),
            dir_name: format!("rate_{}_number_{number}", crate::pyjson::float_repr(rate)),
            dataset_offset: 0,
        })
        .collect())
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
