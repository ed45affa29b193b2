//! A shard's part in one run: record who it is before sending, wait for `--start-at`, and record when it
//! really started once it has (both in the run's arguments, after evalscope's keys).

use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use super::clock::{self, ClockInfo, StartInfo};
use super::{args_record, ShardWork, Sharding, ARGS_KEY};
use crate::plan::{RunPlan, RunSpec};
use crate::run_folder::RunDir;
use crate::shutdown::Shutdown;

/// What the runner carries from [`begin`] to [`finish`].
pub struct ShardStart {
    sharding: Sharding,
    clock: ClockInfo,
    measured: u64,
    slots: Option<usize>,
    /// Open loop: the origin the dispatcher anchors its schedule to.
    pub origin: Option<Instant>,
}

fn write_args(run_dir: &RunDir, args: &Map<String, Value>, record: Value) -> Result<()> {
    let mut args = args.clone();
    args.insert(ARGS_KEY.into(), record);
    run_dir.write_args(&args)
}

/// Before dispatch: writes the shard record and, for the first run with `--start-at`, waits for that
/// instant (closed loop) or hands it to the dispatcher as the schedule origin (open loop: the warmup runs
/// before it). `None` for an ordinary run.
pub async fn begin(
    plan: &RunPlan,
    run_index: usize,
    work: &ShardWork,
    spec: &RunSpec,
    run_dir: &RunDir,
    args: &Map<String, Value>,
    shutdown: &Shutdown,
) -> Result<Option<ShardStart>> {
    let (measured, slots) = (work.measured, work.slots);
    let Some(sharding) = plan.sharding.clone() else {
        return Ok(None);
    };
    let clock = tokio::task::spawn_blocking(ClockInfo::probe)
        .await
        .context("the clock probe failed")?;
    let mut start = ShardStart {
        clock,
        measured,
        slots,
        origin: None,
        sharding,
    };
    write_args(
        run_dir,
        args,
        args_record(&start.sharding, (measured, slots), &start.clock, None),
    )?;
    tracing::info!(
        "Shard {} on {}: {} measured request(s){}",
        start.sharding.label(),
        start.clock.host,
        measured,
        match slots {
            Some(slots) => format!(", {slots} slot(s)"),
            None => String::new(),
        }
    );
    let Some(start_at) = start.sharding.start_at.filter(|_| run_index == 0) else {
        return Ok(Some(start));
    };
    let (at, late_s) = clock::instant_of(start_at);
    if late_s > 0.0 {
        tracing::warn!(
            "--start-at {} passed {late_s:.3} s ago: starting now (the shards' schedules are offset by that much)",
            start_at.to_rfc3339()
        );
    } else {
        tracing::info!(
            "Waiting {:.3} s for --start-at {}",
            at.saturating_duration_since(Instant::now()).as_secs_f64(),
            start_at.to_rfc3339()
        );
    }
    if spec.load.is_open() {
        start.origin = Some(at);
    } else {
        // A stop signal ends the wait; the dispatcher then sends nothing.
        clock::sleep_until(at, shutdown).await;
    }
    Ok(Some(start))
}

/// After dispatch: records the wall-clock instant the measured schedule began (`began`, from the
/// dispatcher) and the clock offset `merge` needs.
pub fn finish(
    start: &ShardStart,
    began: Instant,
    run_dir: &RunDir,
    args: &Map<String, Value>,
) -> Result<()> {
    let info = StartInfo::at(began, start.sharding.start_at);
    if info.late_s > 0.0 && start.sharding.start_at.is_some() {
        tracing::info!(
            "Started {:.6} s after --start-at ({})",
            info.late_s,
            info.started_at_rfc3339()
        );
    }
    write_args(
        run_dir,
        args,
        args_record(
            &start.sharding,
            (start.measured, start.slots),
            &start.clock,
            Some(&info),
        ),
    )
}
