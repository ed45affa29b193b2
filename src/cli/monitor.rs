//! llmperf's own flags for watching a run and for other tools' result formats: `--ui`, `--metrics-listen`,
//! `--metrics-linger-s`, `--save-format` (flattened into [`super::Cli`]). Raw values only; the plan checks
//! them ([`crate::plan::MonitorPlan`]).

use clap::{Args, ValueEnum};

/// The `--help` heading of these flags.
const HEADING: &str = "Watching a run";

/// How a run shows its progress on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum UiKind {
    /// The progress line (requests done / total, rate, time left), or a log line every 10 % when stderr
    /// is not a terminal.
    #[default]
    Simple,
    /// A full-screen live view on the terminal: requests in flight against the target, achieved rate,
    /// TTFT/TPOT/ITL percentiles with a chart over time, errors by kind, send/read lag and CPU, server
    /// metrics when scraped, sweep progress.
    Dashboard,
}

/// A result format written besides evalscope's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SaveFormat {
    /// `vllm bench serve`'s result JSON (`--save-result`), one per run, computed from the run's rows under
    /// vLLM's definitions.
    VllmBench,
}

/// `--ui`, `--metrics-listen`, `--metrics-linger-s`, `--save-format`.
#[derive(Debug, Clone, Default, Args)]
pub struct MonitorArgs {
    /// How the run shows its progress: `simple` (the progress line) or `dashboard` (a full-screen live
    /// view; needs a terminal on stderr). Ctrl-C in the dashboard stops the run as it does without it
    /// (rows kept, summary written, exit 130); log lines go to `benchmark.log` while it is up.
    #[arg(long, value_enum, value_name = "UI", default_value_t = UiKind::Simple, help_heading = HEADING)]
    pub ui: UiKind,

    /// Serve llmperf's own metrics in the Prometheus text format at `http://ADDR/metrics` while it runs
    /// (off by default): `PORT` alone listens on 127.0.0.1 (loopback), `HOST:PORT` where given (e.g.
    /// `0.0.0.0:9400` for a fleet of shards). Requests by outcome and failure kind, in flight, tokens,
    /// TTFT/ITL/latency histograms, send and read lag, the sweep point; labelled run, point, shard.
    #[arg(long, value_name = "[HOST:]PORT", help_heading = HEADING)]
    pub metrics_listen: Option<String>,

    /// With `--metrics-listen`: keep serving this many seconds after the last run, so the last scrape
    /// sees the totals (a signal ends the wait) [default: 0].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, help_heading = HEADING)]
    pub metrics_linger_s: Option<f64>,

    /// Also write each run's results in another tool's format when the run ends: `vllm-bench` (`vllm
    /// bench serve`'s result JSON, into the run's folder; `llmperf export` writes it for a finished run).
    #[arg(long, value_enum, value_name = "FORMAT", help_heading = HEADING)]
    pub save_format: Option<SaveFormat>,
}
