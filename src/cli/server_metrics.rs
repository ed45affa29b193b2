//! The flags of the server's side of a run: `--server-metrics` scraping, and the simulator's `/metrics`
//! fault and reasoning knobs (flattened into [`super::Cli`]).

use clap::Args;

use super::whole;
use crate::sim::MetricsFault;

/// `--server-metrics`, `--server-metrics-interval`, `--mock-metrics-fault`, `--mock-reasoning-tokens`.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerMetricsArgs {
    /// Scrape the server's Prometheus metrics during each run (off by default): give no URL for
    /// `<scheme>://<host:port>/metrics` of `--url`, or one or more URLs (e.g. vLLM's and a DCGM exporter's:
    /// `--server-metrics http://gpu:8000/metrics http://gpu:9400/metrics`). Writes `server_metrics.json` per
    /// run and `Server …` keys in the run's summary file; a failing endpoint is a warning, never an error.
    #[arg(long, num_args = 0.., value_name = "URL", help_heading = "Server metrics")]
    pub server_metrics: Option<Vec<String>>,

    /// Seconds between two scrapes with `--server-metrics` (besides one before and one after each run).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 1.0,
        allow_negative_numbers = true,
        help_heading = "Server metrics"
    )]
    pub server_metrics_interval: f64,

    /// Simulator: make `GET /metrics` misbehave: `missing` (404), `slow` (answers after 10 s) or `garbage`
    /// (text that is not the Prometheus format).
    #[arg(long, value_name = "KIND", help_heading = "Simulator (--api mock)")]
    pub mock_metrics_fault: Option<MetricsFault>,

    /// Simulator: leading output tokens of each chat response sent as `reasoning_content` (and reported as
    /// `usage.completion_tokens_details.reasoning_tokens`).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = whole::<u32>, allow_negative_numbers = true, help_heading = "Simulator (--api mock)")]
    pub mock_reasoning_tokens: u32,
}
