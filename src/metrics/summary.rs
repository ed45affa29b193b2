//! `benchmark_summary.json`: evalscope's summary keys in evalscope's order, then llmperf's extra keys.

/// llmperf's additions to the summary, written after every evalscope key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryExtras {
    /// `true` when the run was cut short by Ctrl-C / SIGTERM.
    pub interrupted: bool,
    /// Failed requests grouped by kind label (see `record::FailureKind::label`), sorted by label.
    pub failures_by_kind: Vec<(String, u64)>,
}

/// One run's summary (evalscope's `BenchmarkSummary`), values already rounded as evalscope rounds them
/// (`round(x, 4)` for plain floats, `round(x * 1000, 2)` for the `(ms)` keys).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchmarkSummary {
    /// `Test Duration (s)`: max completed − min start over measured records (failures included).
    pub test_duration_s: f64,
    /// `Concurrency` (−1 in open loop).
    pub concurrency: i64,
    /// `Request Rate (req/s)` (−1.0 when not paced).
    pub request_rate: f64,
    /// `Total Requests`.
    pub total_requests: u64,
    /// `Success Requests`.
    pub success_requests: u64,
    /// `Failed Requests`.
    pub failed_requests: u64,
    /// `Stream Requests`.
    pub stream_requests: u64,
    /// `Non-Stream Requests`.
    pub non_stream_requests: u64,
    /// `Req Throughput (req/s)`: successes / test duration.
    pub req_throughput: f64,
    /// `Avg Latency (s)`.
    pub avg_latency_s: f64,
    /// `Avg Input Tokens`.
    pub avg_input_tokens: f64,
    /// `Output Throughput (tok/s)`.
    pub output_throughput: f64,
    /// `Total Throughput (tok/s)`.
    pub total_throughput: f64,
    /// `Avg TTFT (ms)`.
    pub avg_ttft_ms: f64,
    /// `Avg TPOT (ms)`.
    pub avg_tpot_ms: f64,
    /// `Avg ITL (ms)`.
    pub avg_itl_ms: f64,
    /// `Avg Output Tokens`.
    pub avg_output_tokens: f64,
    /// `Input Throughput (tok/s)` (0.0 for LLM runs).
    pub input_throughput: f64,
    /// `KV Cache Hit Rate (%)`, only when the server reported cached tokens.
    pub kv_cache_hit_rate_pct: Option<f64>,
    /// llmperf's extra keys.
    pub extras: SummaryExtras,
}
