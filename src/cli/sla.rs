//! Capacity-planning flags: evalscope's `--sla-*` auto-tune flags (spelled and defaulted as evalscope
//! 1.14.1 spells them), llmperf's `--sla-confidence` interval search, `--goodput` SLOs, and the
//! simulator's capacity model (`--mock-max-batch`, `--mock-prefill-tok-per-s`,
//! `--mock-decode-tok-per-s`). Flattened into [`super::Cli`]; checked in [`crate::plan::sla::SlaPlan`].

use clap::Args;

use super::parsers::whole;

/// `--sla-*` and `--goodput`.
#[derive(Debug, Clone, Default, Args)]
pub struct SlaArgs {
    /// Search for the largest `--sla-variable` value that meets `--sla-params` (doubling, then
    /// bisection; each probe runs `--sla-num-runs` times and is averaged). Writes
    /// `sla_tuning/sla_<var>_<value>_run_<i>/` and `sla_summary.json`.
    #[arg(long, help_heading = "SLA auto-tune")]
    pub sla_auto_tune: bool,

    /// The variable searched: `parallel` (closed loop) or `rate` (req/s).
    #[arg(long, default_value = "parallel", value_parser = ["parallel", "rate"], help_heading = "SLA auto-tune")]
    pub sla_variable: String,

    /// The SLA as a JSON list of groups (AND within a group; each group is searched on its own), e.g.
    /// '[{"p99_ttft": "<=500ms", "avg_tpot": "<=50"}]'. Metrics: avg_latency, avg_ttft, avg_tpot, rps,
    /// tps, p99_latency, p50/p90/p99_ttft, p50/p90/p99_tpot. Conditions: <=, <, >=, > (≤ ≥ too) with a
    /// number in the report unit (ms for TTFT/TPOT, s for latency) or a `s`/`ms` suffix; or "max"/"min"
    /// alone to maximise / minimise one metric.
    #[arg(long, value_name = "JSON", help_heading = "SLA auto-tune")]
    pub sla_params: Option<String>,

    /// Runs per probed value, averaged (with `--sla-confidence`: the fewest runs per value).
    #[arg(
        long,
        default_value_t = 3,
        allow_negative_numbers = true,
        help_heading = "SLA auto-tune"
    )]
    pub sla_num_runs: i64,

    /// Largest value searched.
    #[arg(
        long,
        default_value_t = 65536,
        allow_negative_numbers = true,
        help_heading = "SLA auto-tune"
    )]
    pub sla_upper_bound: i64,

    /// Smallest value searched.
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        help_heading = "SLA auto-tune"
    )]
    pub sla_lower_bound: i64,

    /// `--sla-variable rate`: the concurrency cap of each run [default: --sla-upper-bound].
    #[arg(long, allow_negative_numbers = true, help_heading = "SLA auto-tune")]
    pub sla_fixed_parallel: Option<i64>,

    /// Requests per run = max(1, round(value × this)) [default: 2].
    #[arg(long, allow_negative_numbers = true, help_heading = "SLA auto-tune")]
    pub sla_number_multiplier: Option<f64>,

    /// llmperf: report the limit as an interval with this confidence (e.g. 0.95): each probed value is
    /// repeated (at least `--sla-num-runs`, at least 2) until a Student-t interval of every SLA metric
    /// lies on one side of its threshold, or `--sla-max-runs` runs are spent; the result is the largest
    /// value that passes and the smallest that fails, each with that confidence.
    #[arg(long, value_name = "LEVEL", help_heading = "SLA auto-tune")]
    pub sla_confidence: Option<f64>,

    /// llmperf, with `--sla-confidence`: the most runs spent on one value [default: 10].
    #[arg(long, value_parser = whole::<u32>, help_heading = "SLA auto-tune")]
    pub sla_max_runs: Option<u32>,

    /// Goodput SLOs, vLLM's `NAME:MS` syntax: `ttft`, `tpot`, `itl` (the request's largest gap between
    /// two tokens), `e2el` (end-to-end latency), e.g. `--goodput ttft:500 tpot:50`. Every summary gains
    /// `Goodput (req/s)` (requests meeting every SLO per second) and `SLO Attainment (%)`, joint and per
    /// SLO.
    #[arg(long, num_args = 1.., value_name = "NAME:MS", help_heading = "Goodput")]
    pub goodput: Vec<String>,
}

/// The simulator's capacity model (`--api mock`).
#[derive(Debug, Clone, Default, Args)]
pub struct MockCapacityArgs {
    /// Simulator: serve at most N requests at once; the rest wait in arrival order and the wait counts
    /// in their TTFT (0 = no limit). Alone, an admitted request keeps the plain `--mock-ttft-ms` /
    /// `--mock-itl-ms` timing.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = whole::<u32>, help_heading = "Simulator (--api mock)")]
    pub mock_max_batch: u32,

    /// Simulator: one prefill stage processing prompts in arrival order at this many tokens/s (added
    /// to the TTFT after admission; 0 = none).
    #[arg(long, value_name = "TOK_PER_S", default_value_t = 0, value_parser = whole::<u64>, help_heading = "Simulator (--api mock)")]
    pub mock_prefill_tok_per_s: u64,

    /// Simulator: decode throughput shared by the requests being served: each token gap is
    /// max(--mock-itl-ms, served / this) (0 = none).
    #[arg(long, value_name = "TOK_PER_S", default_value_t = 0, value_parser = whole::<u64>, help_heading = "Simulator (--api mock)")]
    pub mock_decode_tok_per_s: u64,
}
