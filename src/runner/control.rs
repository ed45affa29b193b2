//! Server control around one run (issue 27): the prefix-cache reset and the profiler window, timed by the
//! engine's gate — after the connection test and after the warmup has drained, right before the first
//! measured request — and what the run records about them. With `--shard`, shard 0 alone resets, before
//! the common start (no gate: the other shards must not wait on it).

use anyhow::Result;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::context::SweepContext;
use crate::engine::{Gate, GateKeeper, HttpClient};
use crate::run_folder::RunDir;
use crate::server_control::{profile, reset, ControlError, Controller, RunControl};

/// What a run's control task hands back: the record, and the error that fails the run (none when
/// best-effort).
type Controlled = (RunControl, Option<ControlError>);

/// Server control armed for one run.
#[derive(Default)]
pub(super) struct Armed {
    /// The engine's gate (`None`: nothing waits for the warmup).
    pub gate: Option<Gate>,
    task: Option<JoinHandle<Controlled>>,
    ended: Option<oneshot::Sender<()>>,
    /// Done before dispatch (a shard's reset).
    early: Option<Controlled>,
}

/// Whether run `index` resets the cache.
fn resets(ctx: &SweepContext<'_>, index: usize) -> bool {
    ctx.plan.server_control.resets_before(index)
}

fn controller(ctx: &SweepContext<'_>) -> Controller {
    Controller::new(&ctx.url, &ctx.plan.headers, ctx.plan.server_control.kind)
}

/// A reset's outcome as the run records it: a failure is fatal unless best-effort.
async fn do_reset(
    c: &mut Controller,
    best_effort: bool,
    rc: &mut RunControl,
) -> Option<ControlError> {
    match reset::reset(c).await {
        Ok(r) => {
            rc.reset = Some(Ok(r));
            None
        }
        Err(e) if best_effort => {
            tracing::warn!("--reset-prefix-cache (best effort): {e}");
            rc.reset = Some(Err(e.to_string()));
            None
        }
        Err(e) => Some(e),
    }
}

/// Arms run `index`: a shard resets now (shard 0 only); otherwise a task waits at the gate.
pub(super) async fn arm(ctx: &SweepContext<'_>, index: usize, client: &HttpClient) -> Armed {
    let sc = &ctx.plan.server_control;
    if !sc.calls_server() && sc.target_hit_rate.is_none() {
        return Armed::default();
    }
    let best_effort = sc.best_effort;
    if let Some(sharding) = &ctx.plan.sharding {
        // The common start is the gate of a sharded run: reset before it, on shard 0 alone.
        let mut rc = RunControl::default();
        let mut err = None;
        if sharding.index == 0 && resets(ctx, index) {
            err = do_reset(&mut controller(ctx), best_effort, &mut rc).await;
        }
        return Armed {
            early: Some((rc, err)),
            ..Armed::default()
        };
    }
    let (gate, keeper) = Gate::new();
    let (ended_tx, ended) = oneshot::channel();
    let task = tokio::spawn(at_gate(
        controller(ctx),
        resets(ctx, index),
        sc.clone(),
        client.clone(),
        keeper,
        ended,
    ));
    Armed {
        gate: Some(gate),
        task: Some(task),
        ended: Some(ended_tx),
        early: None,
    }
}

/// The control task: at the gate, resets (if due), opens the gate (or keeps it shut on a fatal failure),
/// then runs the profiler's window until the run ends.
async fn at_gate(
    mut c: Controller,
    reset_due: bool,
    sc: crate::server_control::ServerControlPlan,
    client: HttpClient,
    keeper: GateKeeper,
    mut ended: oneshot::Receiver<()>,
) -> Controlled {
    let mut rc = RunControl::default();
    let GateKeeper { reached, open } = keeper;
    let reached = tokio::select! {
        r = reached => r.is_ok(),
        _ = &mut ended => false,
    };
    if !reached {
        // The run ended (or was interrupted) before its first measured request.
        return (rc, None);
    }
    if reset_due {
        if let Some(e) = do_reset(&mut c, sc.best_effort, &mut rc).await {
            let _ = open.send(false);
            return (rc, Some(e));
        }
    }
    let _ = open.send(true);
    let Some(plan) = sc.profile else {
        return (rc, None);
    };
    let (window, err) = profile::window(&mut c, plan, || client.in_flight(), ended).await;
    rc.profile = Some(window);
    match err {
        Some(e) if sc.best_effort => {
            tracing::warn!("--server-profile (best effort): {e}");
            if let Some(w) = rc.profile.as_mut() {
                w.note = Some(e.to_string());
            }
            (rc, None)
        }
        other => (rc, other),
    }
}

impl Armed {
    /// Whether a shard's reset already failed (then the run must not start).
    pub(super) fn failed_early(&self) -> bool {
        matches!(&self.early, Some((_, Some(_))))
    }

    /// After the run's last request: ends the profiler's window and collects what happened.
    pub(super) async fn finish(mut self) -> Result<Controlled> {
        if let Some(early) = self.early.take() {
            return Ok(early);
        }
        if let Some(ended) = self.ended.take() {
            let _ = ended.send(());
        }
        match self.task.take() {
            Some(task) => Ok(task.await?),
            None => Ok((RunControl::default(), None)),
        }
    }
}

/// `--target-cache-hit-rate`: the share of prompt tokens the server reported cached over the run's
/// successful requests after the first 10 % (by send time: the cold start), from the run's database:
/// `(expected, measured, requests counted)`.
pub(super) fn measured_hit_rate(
    db: &std::path::Path,
    expected: f64,
) -> Result<(f64, Option<f64>, u64)> {
    // Streamed out of the database (a sorted scan, not every row in memory).
    let conn = crate::metrics::sql_stats::open_for_scans(db)?;
    let succeeded: i64 = conn.query_row("SELECT COUNT(*) FROM result WHERE success", [], |r| {
        r.get(0)
    })?;
    let (prompt, cached, n): (i64, i64, i64) = conn.query_row(
        "SELECT COALESCE(SUM(p), 0), COALESCE(SUM(c), 0), COUNT(*) FROM (SELECT prompt_tokens AS p, \
         cached_tokens AS c FROM result WHERE success ORDER BY start_time LIMIT -1 OFFSET ?1) \
         WHERE p IS NOT NULL AND c IS NOT NULL",
        [succeeded / 10],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let n = n as u64;
    let measured = (prompt > 0).then(|| cached as f64 / prompt as f64);
    if let Some(m) = measured {
        tracing::info!(
            "Prefix cache hit rate (after the first 10 % of requests): expected {:.1} %, measured {:.1} % over {n} requests",
            expected * 100.0,
            m * 100.0
        );
    }
    Ok((expected, measured, n))
}

/// A control call that failed before the run's load (the reset, or finding the engine): the run's folder
/// is removed — nothing is written for it — and the sweep stops with the endpoint and the server's answer.
pub(super) fn stop_before_load(control: &Controlled, dir: &RunDir) -> Result<()> {
    let (rc, err) = control;
    match err {
        Some(e) if rc.profile.is_none() => {
            if let Err(rm) = dir.remove() {
                tracing::warn!("{rm:#}");
            }
            Err(anyhow::anyhow!(
                "--reset-prefix-cache: {e}; stopped before run {} (its folder removed; earlier runs are kept)",
                dir.name()
            ))
        }
        _ => Ok(()),
    }
}

/// A profiler call that failed during the run: its results are written, then the sweep stops.
pub(super) fn stop_after_run(err: Option<ControlError>) -> Result<()> {
    match err {
        Some(e) => Err(anyhow::anyhow!("--server-profile: {e}")),
        None => Ok(()),
    }
}
