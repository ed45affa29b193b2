//! The plan of the server's side of a run and of its arrival shape: `--server-metrics*`, `--burstiness`,
//! `--ramp-up`, and the simulator's `--mock-metrics-fault` / `--mock-reasoning-tokens`.

use std::time::Duration;

use reqwest::Url;

use super::{usage, ApiKind, ArrivalShape, RunSpec, UsageError};
use crate::cli::server_metrics::ServerMetricsArgs;
use crate::cli::Cli;
use crate::server_metrics::ServerMetricsPlan;
use crate::sim::MetricsFault;

/// What these flags decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSidePlan {
    /// `--server-metrics`: what to scrape, `None` when off.
    pub metrics: Option<ServerMetricsPlan>,
    /// The paced schedule's shape.
    pub arrival: ArrivalShape,
    /// `--mock-metrics-fault`.
    pub mock_metrics_fault: Option<MetricsFault>,
    /// `--mock-reasoning-tokens`.
    pub mock_reasoning_tokens: u32,
    /// `--mock-prefix-cache` (`None`: the workload decides).
    pub mock_prefix_cache: Option<bool>,
}

/// Validates the flags against the runs (`runs` know whether they are paced).
pub fn server_side_plan(
    cli: &Cli,
    api: ApiKind,
    runs: &[RunSpec],
) -> Result<ServerSidePlan, UsageError> {
    let metrics = server_metrics_plan(&cli.server_side)?;
    let paced = runs.iter().all(|r| r.load.rate_as_written() > 0.0);
    let mut arrival = ArrivalShape::default();
    if let Some(k) = cli.arrival.burstiness {
        if !(k.is_finite() && k > 0.0) {
            return usage(format!(
                "--burstiness {k}: must be a number > 0 (1 = Poisson, < 1 burstier, > 1 more even)"
            ));
        }
        if !paced {
            return usage(
                "--burstiness shapes paced arrivals: add --open-loop --rate R, or --rate R",
            );
        }
        arrival.burstiness = k;
    }
    if let Some(d) = cli.arrival.ramp_up {
        if !paced {
            return usage("--ramp-up ramps a paced rate: add --open-loop --rate R, or --rate R");
        }
        arrival.ramp_up_s = Some(d);
    }
    let mock = api == ApiKind::Mock;
    let fault = cli.server_side.mock_metrics_fault;
    let reasoning = cli.server_side.mock_reasoning_tokens;
    let prefix_cache = cli
        .mock_cache
        .mock_prefix_cache
        .map(|v| v == crate::cli::server_control::OnOff::On);
    if !mock && (fault.is_some() || reasoning > 0 || prefix_cache.is_some()) {
        let flag = if fault.is_some() {
            "--mock-metrics-fault"
        } else if reasoning > 0 {
            "--mock-reasoning-tokens"
        } else {
            "--mock-prefix-cache"
        };
        return usage(format!(
            "{flag} configures the built-in simulator: add --api mock, or drop {flag}"
        ));
    }
    Ok(ServerSidePlan {
        metrics,
        arrival,
        mock_metrics_fault: fault,
        mock_reasoning_tokens: reasoning,
        mock_prefix_cache: prefix_cache,
    })
}

/// Validates the flags: `None` when `--server-metrics` was not given.
fn server_metrics_plan(args: &ServerMetricsArgs) -> Result<Option<ServerMetricsPlan>, UsageError> {
    let interval = args.server_metrics_interval;
    if !(interval.is_finite() && interval >= 0.01) {
        return Err(UsageError(format!(
            "--server-metrics-interval {interval}: must be a number of seconds ≥ 0.01"
        )));
    }
    let Some(given) = &args.server_metrics else {
        return Ok(None);
    };
    let mut urls = Vec::new();
    for u in given {
        match Url::parse(u) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                urls.push(url)
            }
            _ => {
                return Err(UsageError(format!(
                    "--server-metrics {u:?}: not an http(s) URL (e.g. http://gpu:8000/metrics)"
                )))
            }
        }
    }
    Ok(Some(ServerMetricsPlan {
        urls,
        interval: Duration::from_secs_f64(interval),
    }))
}
