//! `benchmark_summary.json` as written: a wire struct whose fields carry evalscope's key names
//! (`#[serde(rename)]`) in evalscope's order, then llmperf's extra keys, each present only when it applies.
//! The computing type is [`BenchmarkSummary`]; this file only decides the bytes.

use serde::Serialize;
use serde_json::{Map, Value};

use super::client::ClientDiagnostics;
use super::summary::BenchmarkSummary;
use crate::pyjson;

/// The exact text of `benchmark_summary.json` for `s` (indent 4, Python float repr, no trailing newline).
pub(super) fn summary_json(s: &BenchmarkSummary) -> String {
    let wire = SummaryJson::new(s);
    match serde_json::to_value(&wire) {
        Ok(Value::Object(mut m)) => {
            // Keys other parts of llmperf add after all of these (see `SummaryExtras::appended`).
            for (key, value) in &s.extras.appended {
                m.insert(key.clone(), value.clone());
            }
            pyjson::dumps_indent4(&m)
        }
        _ => unreachable!("a struct serialises to a JSON object"),
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
struct SummaryJson {
    #[serde(rename = "Test Duration (s)")]
    test_duration_s: f64,
    #[serde(rename = "Concurrency")]
    concurrency: i64,
    #[serde(rename = "Request Rate (req/s)")]
    request_rate: f64,
    #[serde(rename = "Total Requests")]
    total_requests: u64,
    #[serde(rename = "Success Requests")]
    success_requests: u64,
    #[serde(rename = "Failed Requests")]
    failed_requests: u64,
    #[serde(rename = "Stream Requests")]
    stream_requests: u64,
    #[serde(rename = "Non-Stream Requests")]
    non_stream_requests: u64,
    #[serde(rename = "Req Throughput (req/s)")]
    req_throughput: f64,
    #[serde(rename = "Avg Latency (s)")]
    avg_latency_s: f64,
    #[serde(rename = "Avg Input Tokens")]
    avg_input_tokens: f64,
    #[serde(rename = "Output Throughput (tok/s)")]
    output_throughput: f64,
    #[serde(rename = "Total Throughput (tok/s)")]
    total_throughput: f64,
    #[serde(rename = "Avg TTFT (ms)")]
    avg_ttft_ms: f64,
    #[serde(rename = "Avg TPOT (ms)")]
    avg_tpot_ms: f64,
    #[serde(rename = "Avg ITL (ms)")]
    avg_itl_ms: f64,
    #[serde(rename = "Avg Output Tokens")]
    avg_output_tokens: f64,
    #[serde(rename = "Input Throughput (tok/s)")]
    input_throughput: f64,
    #[serde(rename = "Avg Turns/Request", skip_serializing_if = "Option::is_none")]
    avg_turns: Option<f64>,
    #[serde(
        rename = "KV Cache Hit Rate (%)",
        skip_serializing_if = "Option::is_none"
    )]
    kv_cache_hit_rate_pct: Option<f64>,
    #[serde(
        rename = "Avg First-Turn TTFT (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    avg_first_turn_ttft_ms: Option<f64>,
    #[serde(
        rename = "Avg Subsequent-Turn TTFT (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    avg_later_turn_ttft_ms: Option<f64>,
    #[serde(
        rename = "Avg Decoded Tok/Iter",
        skip_serializing_if = "Option::is_none"
    )]
    avg_decoded_tokens_per_iter: Option<f64>,
    #[serde(rename = "Spec. Accept Rate", skip_serializing_if = "Option::is_none")]
    spec_accept_rate: Option<f64>,
    // llmperf's extras, after every evalscope key.
    #[serde(
        rename = "Wall Input Throughput (tok/s)",
        skip_serializing_if = "Option::is_none"
    )]
    wall_input_throughput: Option<f64>,
    #[serde(rename = "Interrupted", skip_serializing_if = "is_false")]
    interrupted: bool,
    #[serde(rename = "Failures By Kind", skip_serializing_if = "Map::is_empty")]
    failures_by_kind: Map<String, Value>,
    #[serde(
        rename = "Avg Intended Input Tokens",
        skip_serializing_if = "Option::is_none"
    )]
    avg_intended_input_tokens: Option<f64>,
    #[serde(
        rename = "Avg Input Token Error",
        skip_serializing_if = "Option::is_none"
    )]
    avg_input_token_error: Option<f64>,
    #[serde(
        rename = "Max Input Token Error",
        skip_serializing_if = "Option::is_none"
    )]
    max_input_token_error: Option<i64>,
    #[serde(
        rename = "Exact Input Tokens (%)",
        skip_serializing_if = "Option::is_none"
    )]
    exact_input_tokens_pct: Option<f64>,
    #[serde(flatten)]
    client: Option<ClientJson>,
}

/// The client's self-diagnostics keys.
#[derive(Serialize)]
struct ClientJson {
    #[serde(rename = "Client CPU (% of one core)")]
    cpu_pct_one_core: f64,
    #[serde(rename = "Client CPU (% of all cores)")]
    cpu_pct_all_cores: f64,
    #[serde(rename = "Client Scheduling Delay (ms)")]
    sched_delay_ms: f64,
    #[serde(
        rename = "Client Busiest Thread (%)",
        skip_serializing_if = "Option::is_none"
    )]
    busiest_thread_pct: Option<f64>,
    #[serde(rename = "Send Lag P50 (ms)")]
    send_lag_p50_ms: f64,
    #[serde(rename = "Send Lag P99 (ms)")]
    send_lag_p99_ms: f64,
    #[serde(rename = "Read Lag P50 (ms)")]
    read_lag_p50_ms: f64,
    #[serde(rename = "Read Lag P99 (ms)")]
    read_lag_p99_ms: f64,
    #[serde(flatten)]
    from_schedule: Option<FromScheduleJson>,
    #[serde(rename = "Client Limited")]
    limited: bool,
    #[serde(rename = "Client Warning", skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

/// Open-loop timings from the intended send time.
#[derive(Serialize)]
struct FromScheduleJson {
    #[serde(rename = "Avg TTFT From Intended Send (ms)")]
    avg_ttft_ms: f64,
    #[serde(rename = "P50 TTFT From Intended Send (ms)")]
    p50_ttft_ms: f64,
    #[serde(rename = "P99 TTFT From Intended Send (ms)")]
    p99_ttft_ms: f64,
    #[serde(rename = "Avg Latency From Intended Send (s)")]
    avg_latency_s: f64,
    #[serde(rename = "P50 Latency From Intended Send (s)")]
    p50_latency_s: f64,
    #[serde(rename = "P99 Latency From Intended Send (s)")]
    p99_latency_s: f64,
}

impl SummaryJson {
    fn new(s: &BenchmarkSummary) -> SummaryJson {
        let extras = &s.extras;
        let token_error = extras.input_token_error.as_ref();
        SummaryJson {
            test_duration_s: s.test_duration_s,
            concurrency: s.concurrency,
            request_rate: s.request_rate,
            total_requests: s.total_requests,
            success_requests: s.success_requests,
            failed_requests: s.failed_requests,
            stream_requests: s.stream_requests,
            non_stream_requests: s.non_stream_requests,
            req_throughput: s.req_throughput,
            avg_latency_s: s.avg_latency_s,
            avg_input_tokens: s.avg_input_tokens,
            output_throughput: s.output_throughput,
            total_throughput: s.total_throughput,
            avg_ttft_ms: s.avg_ttft_ms,
            avg_tpot_ms: s.avg_tpot_ms,
            avg_itl_ms: s.avg_itl_ms,
            avg_output_tokens: s.avg_output_tokens,
            input_throughput: s.input_throughput,
            avg_turns: s.avg_turns,
            kv_cache_hit_rate_pct: s.kv_cache_hit_rate_pct,
            avg_first_turn_ttft_ms: s.avg_first_turn_ttft_ms,
            avg_later_turn_ttft_ms: s.avg_later_turn_ttft_ms,
            avg_decoded_tokens_per_iter: s.avg_decoded_tokens_per_iter,
            spec_accept_rate: s.spec_accept_rate,
            wall_input_throughput: extras.wall_input_throughput,
            interrupted: extras.interrupted,
            failures_by_kind: extras
                .failures_by_kind
                .iter()
                .map(|(label, n)| (label.clone(), Value::from(*n)))
                .collect(),
            avg_intended_input_tokens: token_error.map(|e| e.avg_intended),
            avg_input_token_error: token_error.map(|e| e.avg_error),
            max_input_token_error: token_error.map(|e| e.max_error),
            exact_input_tokens_pct: token_error.map(|e| e.exact_pct),
            client: extras.client.as_ref().map(ClientJson::new),
        }
    }
}

impl ClientJson {
    fn new(c: &ClientDiagnostics) -> ClientJson {
        ClientJson {
            cpu_pct_one_core: c.cpu_pct_one_core,
            cpu_pct_all_cores: c.cpu_pct_all_cores,
            sched_delay_ms: c.sched_delay_ms,
            busiest_thread_pct: c.busiest_thread.as_ref().map(|(_, pct)| *pct),
            send_lag_p50_ms: c.send_lag_p50_ms,
            send_lag_p99_ms: c.send_lag_p99_ms,
            read_lag_p50_ms: c.read_lag_p50_ms,
            read_lag_p99_ms: c.read_lag_p99_ms,
            from_schedule: c
                .from_schedule
                .filter(|f| f.avg_ttft_ms.is_finite())
                .map(|f| FromScheduleJson {
                    avg_ttft_ms: f.avg_ttft_ms,
                    p50_ttft_ms: f.p50_ttft_ms,
                    p99_ttft_ms: f.p99_ttft_ms,
                    avg_latency_s: f.avg_latency_s,
                    p50_latency_s: f.p50_latency_s,
                    p99_latency_s: f.p99_latency_s,
                }),
            limited: !c.limits.is_empty(),
            warning: c.warning(),
        }
    }
}
