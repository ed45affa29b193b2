//! Watching a sweep while it runs: the live board ([`crate::live`]) the aggregators publish to, the
//! terminal dashboard (`--ui dashboard`) and llmperf's own metrics endpoint (`--metrics-listen`). Both
//! start before anything is written (a missing terminal or a taken port is a usage error); the dashboard
//! closes when the last run ends, before the report is printed; the endpoint stays up
//! `--metrics-linger-s` longer so the last scrape sees the totals.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::dashboard::Dashboard;
use crate::error::Error;
use crate::live::{Board, PointFeed, Target};
use crate::metrics_endpoint::MetricsEndpoint;
use crate::plan::{Load, RunPlan, RunSpec};
use crate::shutdown::Shutdown;

/// The sweep's live board and what reads it.
pub(crate) struct Monitors {
    board: Option<Arc<Board>>,
    dashboard: Mutex<Option<Dashboard>>,
    endpoint: Option<MetricsEndpoint>,
    linger: std::time::Duration,
}

impl Monitors {
    /// Starts what the plan asks for (nothing for the plain progress line without an endpoint).
    pub(crate) fn start(plan: &RunPlan, shutdown: &Shutdown) -> Result<Monitors, Error> {
        let wanted = plan.monitor.ui == crate::plan::monitor::UiKind::Dashboard
            || plan.monitor.metrics_listen.is_some();
        let board = wanted.then(|| {
            Arc::new(Board::new(
                plan.outputs.name.clone(),
                plan.sharding.as_ref().map(|s| s.index),
                plan.sla.is_none().then_some(plan.runs.len()),
                plan.model.clone(),
            ))
        });
        let endpoint = match (plan.monitor.metrics_listen, &board) {
            (Some(addr), Some(board)) => {
                let ep = MetricsEndpoint::start(addr, board.clone()).map_err(|e| {
                    Error::usage(format!(
                        "--metrics-listen {addr}: cannot listen there ({e})"
                    ))
                })?;
                tracing::info!("llmperf's metrics: http://{}/metrics", ep.addr());
                Some(ep)
            }
            _ => None,
        };
        let dashboard = match (plan.monitor.ui, &board) {
            (crate::plan::monitor::UiKind::Dashboard, Some(board)) => {
                Some(Dashboard::start(board.clone(), shutdown).map_err(Error::usage)?)
            }
            _ => None,
        };
        Ok(Monitors {
            board,
            dashboard: Mutex::new(dashboard),
            endpoint,
            linger: plan.monitor.metrics_linger,
        })
    }

    /// Nothing watches (`--dry-run`, and unit tests that build a sweep's context by hand).
    pub(crate) fn none() -> Monitors {
        Monitors {
            board: None,
            dashboard: Mutex::new(None),
            endpoint: None,
            linger: std::time::Duration::ZERO,
        }
    }

    /// Registers a run (when anything watches) and returns the feed for its aggregator. `total` is
    /// what this process sends of it, `parallel` its share of the concurrency.
    pub(crate) fn start_point(
        &self,
        spec: &RunSpec,
        total: u64,
        parallel: usize,
        sent: Arc<AtomicU64>,
    ) -> Option<PointFeed> {
        let board = self.board.as_ref()?;
        let target = match spec.load {
            Load::Closed { pacing, .. } => Target::Concurrency {
                parallel,
                rate: pacing.map(crate::plan::Rate::per_s),
            },
            Load::Open { rate } => Target::Rate(rate.per_s()),
            Load::Trace { .. } => Target::Trace,
        };
        Some(board.start_point(crate::run_folder::run_name(spec), total, target, sent))
    }

    /// The last run has ended: the board says so and the dashboard gives the terminal back (before the
    /// report is printed).
    pub(crate) fn sweep_done(&self) {
        if let Some(board) = &self.board {
            board.finish();
        }
        let dashboard = self
            .dashboard
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        drop(dashboard);
    }

    /// After the sweep: keeps the endpoint up `--metrics-linger-s` (unless a signal stopped the sweep or
    /// comes meanwhile), then stops everything.
    pub(crate) async fn finish(self, shutdown: &Shutdown) {
        self.sweep_done();
        if let Some(ep) = &self.endpoint {
            if !self.linger.is_zero() && !shutdown.stopping() {
                tracing::info!(
                    "Serving the final metrics at http://{}/metrics for {} s (--metrics-linger-s)",
                    ep.addr(),
                    self.linger.as_secs_f64()
                );
                tokio::select! {
                    _ = tokio::time::sleep(self.linger) => {}
                    _ = shutdown.stopped() => {}
                }
            }
        }
    }
}
