//! The run's summary file: [`BenchmarkSummary`] is the file. Its serde field order is evalscope's key
//! order, each field `rename`d to evalscope's key; optional keys (PD, multi-turn, speculative decoding)
//! are skipped when absent; llmperf's extra keys follow in [`SummaryExtras`] (interrupted, failures by
//! kind, input-token error, the client's self-diagnostics, goodput, appended keys). It is written through
//! `pyjson`, so floats print as Python prints them. Also the raw metrics message (evalscope's
//! `create_message` dict) that both the summary and the periodic log line are built from.

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::client::ClientDiagnostics;
use crate::pyjson;

/// A number as Python holds it in evalscope's metrics message: `_safe_div`'s `-1` sentinel stays an `int`
/// (and prints as `-1` in the periodic log), every computed value is a `float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PyNum {
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
}

impl PyNum {
    /// Python's `round(x, nd)`: an `int` stays an `int`.
    pub(crate) fn round(self, nd: u32) -> PyNum {
        match self {
            PyNum::Int(i) => PyNum::Int(i),
            PyNum::Float(f) => PyNum::Float(pyjson::round(f, nd)),
        }
    }

    /// `round(x * 1000, 2)`: seconds to the `(ms)` keys.
    pub(crate) fn ms(self) -> PyNum {
        match self {
            PyNum::Int(i) => PyNum::Int(i * 1000),
            PyNum::Float(f) => PyNum::Float(pyjson::round(f * 1000.0, 2)),
        }
    }

    /// The value as pydantic stores it in a `float` field.
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            PyNum::Int(i) => i as f64,
            PyNum::Float(f) => f,
        }
    }

    /// Python's `json.dumps` text of the value.
    fn repr(self) -> String {
        match self {
            PyNum::Int(i) => i.to_string(),
            PyNum::Float(f) => pyjson::float_repr(f),
        }
    }
}

/// The raw metrics message: evalscope's `create_message` dict, keys in its insertion order.
pub(crate) type Message = Vec<(&'static str, PyNum)>;

/// `json.dumps(message, indent=2)`: the periodic "every N queries" log text.
pub(crate) fn message_json_indent2(message: &Message) -> String {
    if message.is_empty() {
        return "{}".to_string();
    }
    let body: Vec<String> = message
        .iter()
        .map(|(key, value)| format!("  {}: {}", Value::from(*key), value.repr()))
        .collect();
    format!("{{\n{}\n}}", body.join(",\n"))
}

/// `json.dumps(message)`: the message on one line (what a visualizer receives).
pub(crate) fn message_json_compact(message: &Message) -> String {
    let body: Vec<String> = message
        .iter()
        .map(|(key, value)| format!("{}: {}", Value::from(*key), value.repr()))
        .collect();
    format!("{{{}}}", body.join(", "))
}

/// The metrics message's keys, as evalscope spells them (the same strings name [`BenchmarkSummary`]'s
/// fields; a unit test holds the two together).
pub(crate) mod keys {
    pub const TEST_DURATION: &str = "Test Duration (s)";
    pub const CONCURRENCY: &str = "Concurrency";
    pub const REQUEST_RATE: &str = "Request Rate (req/s)";
    pub const TOTAL_REQUESTS: &str = "Total Requests";
    pub const SUCCESS_REQUESTS: &str = "Success Requests";
    pub const FAILED_REQUESTS: &str = "Failed Requests";
    pub const STREAM_REQUESTS: &str = "Stream Requests";
    pub const NON_STREAM_REQUESTS: &str = "Non-Stream Requests";
    pub const REQ_THROUGHPUT: &str = "Req Throughput (req/s)";
    pub const AVG_LATENCY: &str = "Avg Latency (s)";
    pub const AVG_INPUT_TOKENS: &str = "Avg Input Tokens";
    pub const OUTPUT_THROUGHPUT: &str = "Output Throughput (tok/s)";
    pub const TOTAL_THROUGHPUT: &str = "Total Throughput (tok/s)";
    pub const AVG_TTFT: &str = "Avg TTFT (ms)";
    pub const AVG_TPOT: &str = "Avg TPOT (ms)";
    pub const AVG_ITL: &str = "Avg ITL (ms)";
    pub const AVG_STEADY_ITL: &str = "Avg Steady ITL (ms)";
    pub const AVG_PD_HANDOFF_LATENCY: &str = "Avg PD Handoff Latency (ms)";
    pub const AVG_PD_HANDOFF_OVERHEAD: &str = "Avg PD Handoff Overhead (ms)";
    pub const AVG_OUTPUT_TOKENS: &str = "Avg Output Tokens";
    pub const INPUT_THROUGHPUT: &str = "Input Throughput (tok/s)";
    pub const AVG_TURNS: &str = "Avg Turns/Request";
    pub const KV_CACHE_HIT_RATE: &str = "KV Cache Hit Rate (%)";
    pub const AVG_FIRST_TURN_TTFT: &str = "Avg First-Turn TTFT (ms)";
    pub const AVG_LATER_TURN_TTFT: &str = "Avg Subsequent-Turn TTFT (ms)";
    pub const AVG_DECODED_TOK_PER_ITER: &str = "Avg Decoded Tok/Iter";
    pub const SPEC_ACCEPT_RATE: &str = "Spec. Accept Rate";
}

/// How far the server's `usage.prompt_tokens` was from the prompt length llmperf intended (token-exact
/// datasets only): tells users when their tokenizer or chat template does not match the server's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct InputTokenError {
    /// Successful requests with an intended length.
    #[serde(skip)]
    pub requests: u64,
    /// `Avg Intended Input Tokens`.
    #[serde(rename = "Avg Intended Input Tokens")]
    pub avg_intended: f64,
    /// `Avg Input Token Error`: mean of server − intended (signed).
    #[serde(rename = "Avg Input Token Error")]
    pub avg_error: f64,
    /// `Max Input Token Error`: the server − intended difference of largest magnitude (signed).
    #[serde(rename = "Max Input Token Error")]
    pub max_error: i64,
    /// `Exact Input Tokens (%)`: share of requests where the server counted exactly the intended length.
    #[serde(rename = "Exact Input Tokens (%)")]
    pub exact_pct: f64,
}

/// llmperf's additions to the summary, written after every evalscope key, in this order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SummaryExtras {
    /// `Wall Input Throughput (tok/s)`: Σprompt tokens of successes / test duration, for input-only
    /// (embedding / rerank) runs, whose evalscope `Input Throughput (tok/s)` is Σtokens / Σlatency.
    #[serde(
        rename = "Wall Input Throughput (tok/s)",
        skip_serializing_if = "Option::is_none"
    )]
    pub wall_input_throughput: Option<f64>,
    /// `Interrupted`: `true` when the run was cut short by Ctrl-C / SIGTERM (absent otherwise).
    #[serde(rename = "Interrupted", skip_serializing_if = "is_false")]
    pub interrupted: bool,
    /// `Failures By Kind`: failed requests grouped by kind label (see `record::FailureKind::label`),
    /// sorted by label (absent when none failed).
    #[serde(
        rename = "Failures By Kind",
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "object"
    )]
    pub failures_by_kind: Vec<(String, u64)>,
    /// The first failure of each kind (status and error excerpt), for the console, the text and HTML
    /// reports; not written to the summary file (the run's database has every error).
    #[serde(skip)]
    pub first_errors: Vec<super::first_errors::FirstError>,
    /// Server vs intended prompt tokens, when the dataset knows the intended length.
    #[serde(flatten)]
    pub input_token_error: Option<InputTokenError>,
    /// The client's self-diagnostics (every run llmperf makes; absent when a summary is rebuilt from
    /// stored rows).
    #[serde(flatten)]
    pub client: Option<ClientDiagnostics>,
    /// `--goodput`: goodput and SLO attainment.
    #[serde(flatten)]
    pub goodput: Option<super::goodput::GoodputSummary>,
    /// The delivered load and its verdict ([`super::load`]; absent when the run stored no rows to judge).
    #[serde(flatten)]
    pub load: Option<super::load::LoadVerdict>,
    /// The plateau window and its `Plateau …` metrics ([`super::load::Plateau`]; absent with `load`).
    #[serde(flatten)]
    pub plateau: Option<super::load::Plateau>,
    /// Further keys written last, in order (reasoning accounting, `--server-metrics`).
    #[serde(flatten, serialize_with = "object")]
    pub appended: Vec<(String, Value)>,
    /// The connection phases of the stored requests ([`super::phases`]; absent when no row has any),
    /// after every other key.
    #[serde(flatten)]
    pub phases: Option<super::phases::PhaseSummary>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Pairs written as one JSON object, in their order.
fn object<S: Serializer, V: Serialize>(pairs: &[(String, V)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// One run's summary (evalscope's `BenchmarkSummary`), values already rounded as evalscope rounds them
/// (`round(x, 4)` for plain floats, `round(x * 1000, 2)` for the `(ms)` keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BenchmarkSummary {
    /// `Test Duration (s)`: max completed − min start over measured records (failures included).
    #[serde(rename = "Test Duration (s)")]
    pub test_duration_s: f64,
    /// `Concurrency` (−1 in open loop).
    #[serde(rename = "Concurrency")]
    pub concurrency: i64,
    /// `Request Rate (req/s)` (−1.0 when not paced).
    #[serde(rename = "Request Rate (req/s)")]
    pub request_rate: f64,
    /// `Total Requests`.
    #[serde(rename = "Total Requests")]
    pub total_requests: u64,
    /// `Success Requests`.
    #[serde(rename = "Success Requests")]
    pub success_requests: u64,
    /// `Failed Requests`.
    #[serde(rename = "Failed Requests")]
    pub failed_requests: u64,
    /// `Stream Requests`.
    #[serde(rename = "Stream Requests")]
    pub stream_requests: u64,
    /// `Non-Stream Requests`.
    #[serde(rename = "Non-Stream Requests")]
    pub non_stream_requests: u64,
    /// `Req Throughput (req/s)`: successes / test duration.
    #[serde(rename = "Req Throughput (req/s)")]
    pub req_throughput: f64,
    /// `Avg Latency (s)`.
    #[serde(rename = "Avg Latency (s)")]
    pub avg_latency_s: f64,
    /// `Avg Input Tokens`.
    #[serde(rename = "Avg Input Tokens")]
    pub avg_input_tokens: f64,
    /// `Output Throughput (tok/s)`.
    #[serde(rename = "Output Throughput (tok/s)")]
    pub output_throughput: f64,
    /// `Total Throughput (tok/s)`.
    #[serde(rename = "Total Throughput (tok/s)")]
    pub total_throughput: f64,
    /// `Avg TTFT (ms)`.
    #[serde(rename = "Avg TTFT (ms)")]
    pub avg_ttft_ms: f64,
    /// `Avg TPOT (ms)`.
    #[serde(rename = "Avg TPOT (ms)")]
    pub avg_tpot_ms: f64,
    /// `Avg ITL (ms)`.
    #[serde(rename = "Avg ITL (ms)")]
    pub avg_itl_ms: f64,
    /// `Avg Steady ITL (ms)` (`--enable-pd-metrics`, when some reply had two ITLs or more).
    #[serde(
        rename = "Avg Steady ITL (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_steady_itl_ms: Option<f64>,
    /// `Avg PD Handoff Latency (ms)` (`--enable-pd-metrics`, when some reply had an ITL).
    #[serde(
        rename = "Avg PD Handoff Latency (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_pd_handoff_latency_ms: Option<f64>,
    /// `Avg PD Handoff Overhead (ms)` (`--enable-pd-metrics`, when some reply had two ITLs or more).
    #[serde(
        rename = "Avg PD Handoff Overhead (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_pd_handoff_overhead_ms: Option<f64>,
    /// `Avg Output Tokens`.
    #[serde(rename = "Avg Output Tokens")]
    pub avg_output_tokens: f64,
    /// `Input Throughput (tok/s)` (0.0 for LLM runs).
    #[serde(rename = "Input Throughput (tok/s)")]
    pub input_throughput: f64,
    /// `Avg Turns/Request` (multi-turn): mean turns in a request's context.
    #[serde(rename = "Avg Turns/Request", skip_serializing_if = "Option::is_none")]
    pub avg_turns: Option<f64>,
    /// `KV Cache Hit Rate (%)`, only when the server reported cached tokens (or, in multi-turn runs,
    /// evalscope's estimate from the previous turn).
    #[serde(
        rename = "KV Cache Hit Rate (%)",
        skip_serializing_if = "Option::is_none"
    )]
    pub kv_cache_hit_rate_pct: Option<f64>,
    /// `Avg First-Turn TTFT (ms)` (multi-turn).
    #[serde(
        rename = "Avg First-Turn TTFT (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_first_turn_ttft_ms: Option<f64>,
    /// `Avg Subsequent-Turn TTFT (ms)` (multi-turn).
    #[serde(
        rename = "Avg Subsequent-Turn TTFT (ms)",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_later_turn_ttft_ms: Option<f64>,
    /// `Avg Decoded Tok/Iter` (speculative decoding), only when some reply averaged more than one token
    /// per chunk.
    #[serde(
        rename = "Avg Decoded Tok/Iter",
        skip_serializing_if = "Option::is_none"
    )]
    pub avg_decoded_tokens_per_iter: Option<f64>,
    /// `Spec. Accept Rate` = clamp(1 − 1/`Avg Decoded Tok/Iter`, 0, 1), present with it.
    #[serde(rename = "Spec. Accept Rate", skip_serializing_if = "Option::is_none")]
    pub spec_accept_rate: Option<f64>,
    /// llmperf's extra keys.
    #[serde(flatten)]
    pub extras: SummaryExtras,
}

impl BenchmarkSummary {
    /// Builds the summary from a metrics message as evalscope's pydantic model does: keys the message
    /// lacks keep their defaults (0.0, or absent for the optional ones).
    pub(crate) fn from_message(message: &Message, extras: SummaryExtras) -> Self {
        let mut s = BenchmarkSummary {
            extras,
            ..Default::default()
        };
        for &(key, value) in message {
            let f = value.as_f64();
            let count = f.max(0.0) as u64;
            match key {
                keys::TEST_DURATION => s.test_duration_s = f,
                keys::CONCURRENCY => s.concurrency = f as i64,
                keys::REQUEST_RATE => s.request_rate = f,
                keys::TOTAL_REQUESTS => s.total_requests = count,
                keys::SUCCESS_REQUESTS => s.success_requests = count,
                keys::FAILED_REQUESTS => s.failed_requests = count,
                keys::STREAM_REQUESTS => s.stream_requests = count,
                keys::NON_STREAM_REQUESTS => s.non_stream_requests = count,
                keys::REQ_THROUGHPUT => s.req_throughput = f,
                keys::AVG_LATENCY => s.avg_latency_s = f,
                keys::AVG_INPUT_TOKENS => s.avg_input_tokens = f,
                keys::OUTPUT_THROUGHPUT => s.output_throughput = f,
                keys::TOTAL_THROUGHPUT => s.total_throughput = f,
                keys::AVG_TTFT => s.avg_ttft_ms = f,
                keys::AVG_TPOT => s.avg_tpot_ms = f,
                keys::AVG_ITL => s.avg_itl_ms = f,
                keys::AVG_STEADY_ITL => s.avg_steady_itl_ms = Some(f),
                keys::AVG_PD_HANDOFF_LATENCY => s.avg_pd_handoff_latency_ms = Some(f),
                keys::AVG_PD_HANDOFF_OVERHEAD => s.avg_pd_handoff_overhead_ms = Some(f),
                keys::AVG_OUTPUT_TOKENS => s.avg_output_tokens = f,
                keys::INPUT_THROUGHPUT => s.input_throughput = f,
                keys::AVG_TURNS => s.avg_turns = Some(f),
                keys::KV_CACHE_HIT_RATE => s.kv_cache_hit_rate_pct = Some(f),
                keys::AVG_FIRST_TURN_TTFT => s.avg_first_turn_ttft_ms = Some(f),
                keys::AVG_LATER_TURN_TTFT => s.avg_later_turn_ttft_ms = Some(f),
                keys::AVG_DECODED_TOK_PER_ITER => s.avg_decoded_tokens_per_iter = Some(f),
                keys::SPEC_ACCEPT_RATE => s.spec_accept_rate = Some(f),
                other => debug_assert!(false, "unknown summary key {other}"),
            }
        }
        s
    }

    /// The exact text of the run's summary file: the fields in order (indent 4, Python float repr, no
    /// trailing newline).
    pub fn to_json_string(&self) -> String {
        pyjson::dumps_indent4(self)
    }
}

#[cfg(test)]
mod tests;
