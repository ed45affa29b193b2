//! `benchmark_summary.json`: evalscope's summary keys in evalscope's order, then llmperf's extra keys
//! (interrupted, failures by kind, then the client's self-diagnostics: CPU use, send lag, open-loop timings
//! from the intended send time, whether the client limited the run); and
//! the raw metrics message (evalscope's `create_message` dict) that both the summary and the periodic log
//! line are built from.

use serde_json::{Map, Value};

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

/// Summary keys, as evalscope spells them.
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
    // llmperf's extras.
    pub const WALL_INPUT_THROUGHPUT: &str = "Wall Input Throughput (tok/s)";
    pub const INTERRUPTED: &str = "Interrupted";
    pub const FAILURES_BY_KIND: &str = "Failures By Kind";
    pub const AVG_INTENDED_INPUT_TOKENS: &str = "Avg Intended Input Tokens";
    pub const AVG_INPUT_TOKEN_ERROR: &str = "Avg Input Token Error";
    pub const MAX_INPUT_TOKEN_ERROR: &str = "Max Input Token Error";
    pub const EXACT_INPUT_TOKENS_PCT: &str = "Exact Input Tokens (%)";
    pub const CLIENT_CPU_ONE_CORE: &str = "Client CPU (% of one core)";
    pub const CLIENT_CPU_ALL_CORES: &str = "Client CPU (% of all cores)";
    pub const CLIENT_SCHED_DELAY: &str = "Client Scheduling Delay (ms)";
    pub const CLIENT_BUSIEST_THREAD: &str = "Client Busiest Thread (%)";
    pub const SEND_LAG_P50: &str = "Send Lag P50 (ms)";
    pub const SEND_LAG_P99: &str = "Send Lag P99 (ms)";
    pub const READ_LAG_P50: &str = "Read Lag P50 (ms)";
    pub const READ_LAG_P99: &str = "Read Lag P99 (ms)";
    pub const AVG_TTFT_FROM_INTENDED: &str = "Avg TTFT From Intended Send (ms)";
    pub const P50_TTFT_FROM_INTENDED: &str = "P50 TTFT From Intended Send (ms)";
    pub const P99_TTFT_FROM_INTENDED: &str = "P99 TTFT From Intended Send (ms)";
    pub const AVG_LATENCY_FROM_INTENDED: &str = "Avg Latency From Intended Send (s)";
    pub const P50_LATENCY_FROM_INTENDED: &str = "P50 Latency From Intended Send (s)";
    pub const P99_LATENCY_FROM_INTENDED: &str = "P99 Latency From Intended Send (s)";
    pub const CLIENT_LIMITED: &str = "Client Limited";
    pub const CLIENT_WARNING: &str = "Client Warning";
}

/// How far the server's `usage.prompt_tokens` was from the prompt length llmperf intended (token-exact
/// datasets only): tells users when their tokenizer or chat template does not match the server's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InputTokenError {
    /// Successful requests with an intended length.
    pub requests: u64,
    /// `Avg Intended Input Tokens`.
    pub avg_intended: f64,
    /// `Avg Input Token Error`: mean of server − intended (signed).
    pub avg_error: f64,
    /// `Max Input Token Error`: the server − intended difference of largest magnitude (signed).
    pub max_error: i64,
    /// `Exact Input Tokens (%)`: share of requests where the server counted exactly the intended length.
    pub exact_pct: f64,
}

/// llmperf's additions to the summary, written after every evalscope key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryExtras {
    /// `true` when the run was cut short by Ctrl-C / SIGTERM.
    pub interrupted: bool,
    /// Failed requests grouped by kind label (see `record::FailureKind::label`), sorted by label.
    pub failures_by_kind: Vec<(String, u64)>,
    /// `Wall Input Throughput (tok/s)`: Σprompt tokens of successes / test duration, for input-only
    /// (embedding / rerank) runs, whose evalscope `Input Throughput (tok/s)` is Σtokens / Σlatency.
    pub wall_input_throughput: Option<f64>,
    /// Server vs intended prompt tokens, when the dataset knows the intended length.
    pub input_token_error: Option<InputTokenError>,
    /// The client's self-diagnostics (every run llmperf makes; absent when a summary is rebuilt from
    /// stored rows).
    pub client: Option<ClientDiagnostics>,
    /// `--goodput`: goodput and SLO attainment.
    pub goodput: Option<super::goodput::GoodputSummary>,
    /// Further keys written last, in order (reasoning accounting, `--server-metrics`).
    pub appended: Vec<(String, Value)>,
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
    /// `Avg Steady ITL (ms)` (`--enable-pd-metrics`, when some reply had two ITLs or more).
    pub avg_steady_itl_ms: Option<f64>,
    /// `Avg PD Handoff Latency (ms)` (`--enable-pd-metrics`, when some reply had an ITL).
    pub avg_pd_handoff_latency_ms: Option<f64>,
    /// `Avg PD Handoff Overhead (ms)` (`--enable-pd-metrics`, when some reply had two ITLs or more).
    pub avg_pd_handoff_overhead_ms: Option<f64>,
    /// `Avg Output Tokens`.
    pub avg_output_tokens: f64,
    /// `Input Throughput (tok/s)` (0.0 for LLM runs).
    pub input_throughput: f64,
    /// `Avg Turns/Request` (multi-turn): mean turns in a request's context.
    pub avg_turns: Option<f64>,
    /// `KV Cache Hit Rate (%)`, only when the server reported cached tokens (or, in multi-turn runs,
    /// evalscope's estimate from the previous turn).
    pub kv_cache_hit_rate_pct: Option<f64>,
    /// `Avg First-Turn TTFT (ms)` (multi-turn).
    pub avg_first_turn_ttft_ms: Option<f64>,
    /// `Avg Subsequent-Turn TTFT (ms)` (multi-turn).
    pub avg_later_turn_ttft_ms: Option<f64>,
    /// `Avg Decoded Tok/Iter` (speculative decoding), only when some reply averaged more than one token
    /// per chunk.
    pub avg_decoded_tokens_per_iter: Option<f64>,
    /// `Spec. Accept Rate` = clamp(1 − 1/`Avg Decoded Tok/Iter`, 0, 1), present with it.
    pub spec_accept_rate: Option<f64>,
    /// llmperf's extra keys.
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

    /// The exact text of `benchmark_summary.json`: evalscope's keys in evalscope's order (indent 4, Python
    /// float repr, no trailing newline), then llmperf's extras (`Wall Input Throughput (tok/s)` for
    /// input-only runs, `Interrupted` when interrupted, `Failures By Kind` when any request failed).
    pub fn to_json_string(&self) -> String {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        put(keys::TEST_DURATION, self.test_duration_s.into());
        put(keys::CONCURRENCY, self.concurrency.into());
        put(keys::REQUEST_RATE, self.request_rate.into());
        put(keys::TOTAL_REQUESTS, self.total_requests.into());
        put(keys::SUCCESS_REQUESTS, self.success_requests.into());
        put(keys::FAILED_REQUESTS, self.failed_requests.into());
        put(keys::STREAM_REQUESTS, self.stream_requests.into());
        put(keys::NON_STREAM_REQUESTS, self.non_stream_requests.into());
        put(keys::REQ_THROUGHPUT, self.req_throughput.into());
        put(keys::AVG_LATENCY, self.avg_latency_s.into());
        put(keys::AVG_INPUT_TOKENS, self.avg_input_tokens.into());
        put(keys::OUTPUT_THROUGHPUT, self.output_throughput.into());
        put(keys::TOTAL_THROUGHPUT, self.total_throughput.into());
        put(keys::AVG_TTFT, self.avg_ttft_ms.into());
        put(keys::AVG_TPOT, self.avg_tpot_ms.into());
        put(keys::AVG_ITL, self.avg_itl_ms.into());
        let pd = [
            (keys::AVG_STEADY_ITL, self.avg_steady_itl_ms),
            (keys::AVG_PD_HANDOFF_LATENCY, self.avg_pd_handoff_latency_ms),
            (
                keys::AVG_PD_HANDOFF_OVERHEAD,
                self.avg_pd_handoff_overhead_ms,
            ),
        ];
        for (key, value) in pd {
            if let Some(v) = value {
                put(key, v.into());
            }
        }
        put(keys::AVG_OUTPUT_TOKENS, self.avg_output_tokens.into());
        put(keys::INPUT_THROUGHPUT, self.input_throughput.into());
        let optional = [
            (keys::AVG_TURNS, self.avg_turns),
            (keys::KV_CACHE_HIT_RATE, self.kv_cache_hit_rate_pct),
            (keys::AVG_FIRST_TURN_TTFT, self.avg_first_turn_ttft_ms),
            (keys::AVG_LATER_TURN_TTFT, self.avg_later_turn_ttft_ms),
            (
                keys::AVG_DECODED_TOK_PER_ITER,
                self.avg_decoded_tokens_per_iter,
            ),
            (keys::SPEC_ACCEPT_RATE, self.spec_accept_rate),
            (
                keys::WALL_INPUT_THROUGHPUT,
                self.extras.wall_input_throughput,
            ),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                put(key, v.into());
            }
        }
        if self.extras.interrupted {
            put(keys::INTERRUPTED, Value::Bool(true));
        }
        if !self.extras.failures_by_kind.is_empty() {
            let kinds: Map<String, Value> = self
                .extras
                .failures_by_kind
                .iter()
                .map(|(label, n)| (label.clone(), Value::from(*n)))
                .collect();
            put(keys::FAILURES_BY_KIND, Value::Object(kinds));
        }
        if let Some(e) = &self.extras.input_token_error {
            put(keys::AVG_INTENDED_INPUT_TOKENS, e.avg_intended.into());
            put(keys::AVG_INPUT_TOKEN_ERROR, e.avg_error.into());
            put(keys::MAX_INPUT_TOKEN_ERROR, e.max_error.into());
            put(keys::EXACT_INPUT_TOKENS_PCT, e.exact_pct.into());
        }
        if let Some(c) = &self.extras.client {
            put(keys::CLIENT_CPU_ONE_CORE, c.cpu_pct_one_core.into());
            put(keys::CLIENT_CPU_ALL_CORES, c.cpu_pct_all_cores.into());
            put(keys::CLIENT_SCHED_DELAY, c.sched_delay_ms.into());
            if let Some((_, pct)) = &c.busiest_thread {
                put(keys::CLIENT_BUSIEST_THREAD, (*pct).into());
            }
            put(keys::SEND_LAG_P50, c.send_lag_p50_ms.into());
            put(keys::SEND_LAG_P99, c.send_lag_p99_ms.into());
            put(keys::READ_LAG_P50, c.read_lag_p50_ms.into());
            put(keys::READ_LAG_P99, c.read_lag_p99_ms.into());
            if let Some(f) = c.from_schedule.filter(|f| f.avg_ttft_ms.is_finite()) {
                put(keys::AVG_TTFT_FROM_INTENDED, f.avg_ttft_ms.into());
                put(keys::P50_TTFT_FROM_INTENDED, f.p50_ttft_ms.into());
                put(keys::P99_TTFT_FROM_INTENDED, f.p99_ttft_ms.into());
                put(keys::AVG_LATENCY_FROM_INTENDED, f.avg_latency_s.into());
                put(keys::P50_LATENCY_FROM_INTENDED, f.p50_latency_s.into());
                put(keys::P99_LATENCY_FROM_INTENDED, f.p99_latency_s.into());
            }
            put(keys::CLIENT_LIMITED, Value::Bool(!c.limits.is_empty()));
            if let Some(w) = c.warning() {
                put(keys::CLIENT_WARNING, Value::String(w));
            }
        }
        if let Some(g) = &self.extras.goodput {
            for (k, v) in g.keys() {
                put(&k, v);
            }
        }
        for (key, value) in &self.extras.appended {
            put(key, value.clone());
        }
        pyjson::dumps_indent4(&m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pynum_keeps_python_int_sentinels() {
        assert_eq!(PyNum::Int(-1).round(4), PyNum::Int(-1));
        assert_eq!(PyNum::Int(-1).ms(), PyNum::Int(-1000));
        assert_eq!(PyNum::Float(0.0622499).ms(), PyNum::Float(62.25));
        assert_eq!(PyNum::Float(1.23456).round(4), PyNum::Float(1.2346));
    }

    #[test]
    fn log_message_is_python_indent2() {
        let msg: Message = vec![
            (keys::TEST_DURATION, PyNum::Float(0.2339)),
            (keys::CONCURRENCY, PyNum::Int(2)),
            (keys::AVG_LATENCY, PyNum::Int(-1)),
            (keys::AVG_ITL, PyNum::Float(0.0)),
        ];
        assert_eq!(
            message_json_indent2(&msg),
            "{\n  \"Test Duration (s)\": 0.2339,\n  \"Concurrency\": 2,\n  \"Avg Latency (s)\": -1,\n  \"Avg ITL (ms)\": 0.0\n}"
        );
        assert_eq!(message_json_indent2(&Vec::new()), "{}");
    }

    #[test]
    fn missing_keys_default_and_extras_follow_evalscope_keys() {
        let msg: Message = vec![
            (keys::CONCURRENCY, PyNum::Int(4)),
            (keys::AVG_LATENCY, PyNum::Int(-1)),
        ];
        let extras = SummaryExtras {
            interrupted: true,
            failures_by_kind: vec![("http_status".into(), 3), ("timeout".into(), 1)],
            wall_input_throughput: None,
            client: None,
            input_token_error: None,
            goodput: None,
            appended: Vec::new(),
        };
        let s = BenchmarkSummary::from_message(&msg, extras);
        assert_eq!(s.concurrency, 4);
        assert_eq!(s.avg_latency_s, -1.0);
        assert_eq!(s.input_throughput, 0.0);
        let text = s.to_json_string();
        assert!(text.contains("    \"Avg Latency (s)\": -1.0,\n"));
        assert!(text.ends_with(
            "    \"Input Throughput (tok/s)\": 0.0,\n    \"Interrupted\": true,\n    \"Failures By Kind\": {\n        \"http_status\": 3,\n        \"timeout\": 1\n    }\n}"
        ));
    }
}
