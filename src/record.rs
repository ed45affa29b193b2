//! The one record type that crosses the channel from a request to the aggregator and the store.
//!
//! A worker fills a [`RequestRecord`] while a request runs (timestamps as [`Instant`]s, raw chunk payloads
//! as bytes); [`RequestRecord::finish`] derives evalscope's per-request metrics (TTFT, ITL, TPOT, latency)
//! exactly as `BenchmarkData.finalize` does (spec §4).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock;

pub mod phases;

pub use phases::{ConnMarks, PhaseMarks, Phases};

/// Why a request failed, grouped for the summary ("failures by kind"). The labels are stable: they are
/// written to the `failure_kind` column, the run's summary file and the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// The server answered with an HTTP status other than 200.
    HttpStatus,
    /// The connection could not be made (refused, DNS, TLS, connect timeout).
    Connect,
    /// `--total-timeout` passed before the response ended.
    Timeout,
    /// `--read-timeout` passed without a byte from the server (waiting for the head or inside the body).
    ReadTimeout,
    /// The stream carried an in-band `{"error": …}` event (or a 200 body was one).
    InBandError,
    /// The connection was closed while the response was being read.
    Disconnect,
    /// The connection was reset (RST) while the response was being read.
    Reset,
    /// A stream event or body that should be JSON was not (cut off, invalid JSON, invalid UTF-8).
    Malformed,
    /// The response could not be used: no token usage, a stream that ended without `[DONE]` and usage, or
    /// an unexpected `Content-Type`.
    BadResponse,
    /// The run was interrupted while this request was in flight.
    Cancelled,
}

impl FailureKind {
    /// Every kind, in declaration order.
    pub const ALL: [FailureKind; 10] = [
        FailureKind::HttpStatus,
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::ReadTimeout,
        FailureKind::InBandError,
        FailureKind::Disconnect,
        FailureKind::Reset,
        FailureKind::Malformed,
        FailureKind::BadResponse,
        FailureKind::Cancelled,
    ];

    /// Its place in [`FailureKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A short, stable label used in summaries and the `failure_kind` column.
    pub fn label(self) -> &'static str {
        match self {
            FailureKind::HttpStatus => "http_status",
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::ReadTimeout => "read_timeout",
            FailureKind::InBandError => "in_band_error",
            FailureKind::Disconnect => "disconnect",
            FailureKind::Reset => "reset",
            FailureKind::Malformed => "malformed",
            FailureKind::BadResponse => "bad_response",
            FailureKind::Cancelled => "cancelled",
        }
    }
}

/// Token usage as reported by the server (`usage` object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: Option<u64>,
}

/// Where a request sits in a `--multi-turn` conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnTag {
    /// The conversation's number within the run (warmup conversations included), from 0.
    pub conversation: u64,
    /// The turn's index within its conversation, from 0.
    pub turn_index: u32,
    /// No later turn of this conversation is sent (the last one, the `--max-turns` cap, or a failure).
    pub is_last: bool,
    /// evalscope's per-turn `cached_tokens`: the server's `cached_tokens` when reported, else the previous
    /// turn's prompt + completion tokens (0 on the first turn); `None` without a prompt token count.
    pub cached_tokens: Option<u64>,
}

/// Everything known about one request, from its intended send time to its last byte.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// Position in the run's request list (warmup requests first).
    pub index: usize,
    /// Warmup requests are sent like the others but never stored or summarised.
    pub is_warmup: bool,
    /// The exact JSON body sent (also the DB's `request` column).
    pub request: Arc<str>,
    /// When the request was meant to be sent: the schedule slot (open loop, paced closed loop) or the moment
    /// a concurrency slot became free (closed loop).
    pub scheduled_at: Instant,
    /// Immediately before the request was handed to the HTTP client (evalscope's `st`).
    pub sent_at: Instant,
    /// The last JSON event (stream) or the end of the body (non-stream); for failures, when it failed.
    pub completed_at: Instant,
    /// Arrival time of every output-bearing chunk (stamped at the socket read, before parsing).
    pub chunk_times: Vec<Instant>,
    /// Chunks carrying `choices` from the first output on (evalscope's `n_decode_chunks`).
    pub n_decode_chunks: u32,
    /// `true` when the response was a `text/event-stream`.
    pub is_stream: bool,
    /// `true` when the request succeeded.
    pub success: bool,
    /// HTTP status, when a response arrived.
    pub status_code: Option<u16>,
    /// Failure class, `None` on success.
    pub failure: Option<FailureKind>,
    /// Failure text (server body, transport error), `None` on success.
    pub error: Option<String>,
    /// Server-reported usage.
    pub usage: Usage,
    /// Raw JSON payloads kept for `response_messages`: the stream chunks that carry `choices`, or the whole
    /// non-stream body. Concatenated; `response_spans` gives each one's byte range.
    pub response_bytes: Vec<u8>,
    /// Byte ranges of the individual payloads inside `response_bytes`.
    pub response_spans: Vec<(u32, u32)>,
    /// Prompt tokens llmperf meant the server to count (token-exact datasets), from the prepared request.
    pub intended_prompt_tokens: Option<u64>,
    /// The longest time bytes of this response waited in the socket before the client read them (kernel
    /// receive stamp to read); zero where the kernel gives no stamps. Not a timing error — chunks are
    /// timed at arrival — but a measure of how far behind the client was.
    pub read_lag: Duration,
    /// When the request got past each connection phase ([`phases`]; durations via [`RequestRecord::phases`]).
    pub phase_marks: PhaseMarks,
    /// Its place in a conversation (`--multi-turn` only).
    pub turn: Option<TurnTag>,
    /// The request id: a replayed trace's or an AgentX call's own, else the one llmperf sent in its
    /// request id header; stored in the `request_id` column.
    pub request_id: Option<Arc<str>>,
    /// `--url-strategy`: which endpoint the request goes (went) to, by position among the `--url`s; `None`
    /// until the client picks one (a conversation's turns carry their first turn's).
    pub endpoint: Option<u16>,
    /// `--url-strategy`: that endpoint's URL, stored in the `endpoint` column.
    pub endpoint_url: Option<Arc<str>>,
    /// Header lines sent with this request only, each `Name: value\r\n` (`--session-header`, a replayed
    /// trace's `headers`). Never stored or logged.
    pub extra_headers: Option<Arc<str>>,
    /// Reasoning vs answer accounting, set by the aggregator when the response carried reasoning.
    pub reasoning: Option<ReasoningSplit>,
    /// Tool calls and JSON output, set by the aggregator when the request offered tools or asked for
    /// JSON (runs that may carry them only).
    pub structured: Option<Box<StructuredOutcome>>,
}

impl RequestRecord {
    /// A fresh record for a request about to be sent.
    pub fn new(index: usize, is_warmup: bool, request: Arc<str>, scheduled_at: Instant) -> Self {
        let now = Instant::now();
        RequestRecord {
            index,
            is_warmup,
            request,
            scheduled_at,
            sent_at: now,
            completed_at: now,
            chunk_times: Vec::new(),
            n_decode_chunks: 0,
            is_stream: false,
            success: false,
            status_code: None,
            failure: None,
            error: None,
            usage: Usage::default(),
            response_bytes: Vec::new(),
            response_spans: Vec::new(),
            intended_prompt_tokens: None,
            read_lag: Duration::ZERO,
            phase_marks: PhaseMarks::default(),
            turn: None,
            request_id: None,
            endpoint: None,
            endpoint_url: None,
            extra_headers: None,
            reasoning: None,
            structured: None,
        }
    }

    /// Marks the record failed with `kind` and `error` text, ending it at `at`.
    pub fn fail(&mut self, kind: FailureKind, error: impl Into<String>, at: Instant) {
        self.success = false;
        self.failure = Some(kind);
        self.error = Some(error.into());
        if at >= self.sent_at {
            self.completed_at = at;
        }
    }

    /// Keeps one raw JSON payload for `response_messages`.
    pub fn keep_response(&mut self, payload: &[u8]) {
        let start = self.response_bytes.len() as u32;
        self.response_bytes.extend_from_slice(payload);
        self.response_spans
            .push((start, self.response_bytes.len() as u32));
    }

    /// The kept raw payloads, in arrival order.
    pub fn responses(&self) -> impl Iterator<Item = &[u8]> {
        self.response_spans
            .iter()
            .map(|&(a, b)| &self.response_bytes[a as usize..b as usize])
    }

    /// `start_time` in monotonic seconds.
    pub fn start_time(&self) -> f64 {
        clock::secs(self.sent_at)
    }

    /// `completed_time` in monotonic seconds.
    pub fn completed_time(&self) -> f64 {
        clock::secs(self.completed_at)
    }

    /// Intended send time in monotonic seconds.
    pub fn scheduled_time(&self) -> f64 {
        clock::secs(self.scheduled_at)
    }

    /// Send lag: actual minus intended send time, in seconds (never negative).
    pub fn send_lag_s(&self) -> f64 {
        self.sent_at
            .saturating_duration_since(self.scheduled_at)
            .as_secs_f64()
    }

    /// `query_latency`: completed minus start, seconds.
    pub fn latency_s(&self) -> f64 {
        self.completed_at
            .saturating_duration_since(self.sent_at)
            .as_secs_f64()
    }

    /// `first_chunk_latency` (TTFT), seconds: first output chunk for streams (0.0 when a stream carried no
    /// output, as evalscope), the whole latency for non-stream responses.
    pub fn ttft_s(&self) -> f64 {
        if !self.is_stream {
            return self.latency_s();
        }
        match self.chunk_times.first() {
            Some(t) => t.saturating_duration_since(self.sent_at).as_secs_f64(),
            None => 0.0,
        }
    }

    /// The connection phases, seconds laid end to end from the send (the `phase_*` columns).
    pub fn phases(&self) -> Phases {
        self.phase_marks.durations(self.sent_at)
    }

    /// Gaps between consecutive output chunks, seconds (`inter_chunk_latency`).
    pub fn itl_s(&self) -> impl Iterator<Item = f64> + '_ {
        self.chunk_times
            .windows(2)
            .map(|w| w[1].saturating_duration_since(w[0]).as_secs_f64())
    }

    /// `prompt_tokens` (0 when unknown).
    pub fn prompt_tokens(&self) -> u64 {
        self.usage.prompt_tokens.unwrap_or(0)
    }

    /// `completion_tokens` (0 when unknown).
    pub fn completion_tokens(&self) -> u64 {
        self.usage.completion_tokens.unwrap_or(0)
    }

    /// `time_per_output_token`, seconds: `(latency - ttft) / (completion_tokens - 1)` when more than one token
    /// came back, else 0 (non-stream responses are 0 too, because their TTFT is the latency).
    pub fn tpot_s(&self) -> f64 {
        let n = self.completion_tokens();
        if n > 1 {
            (self.latency_s() - self.ttft_s()) / (n - 1) as f64
        } else {
            0.0
        }
    }

    /// Chunk arrival times in monotonic seconds (the `chunk_times` column).
    pub fn chunk_times_s(&self) -> Vec<f64> {
        self.chunk_times.iter().map(|&t| clock::secs(t)).collect()
    }
}

/// One request's reasoning vs answer split (computed by [`crate::reasoning`] when the request ends).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReasoningSplit {
    /// Seconds from sending to the first reasoning token.
    pub first_reasoning_s: Option<f64>,
    /// Seconds from sending to the first answer token (TTFO); `None` when no answer came.
    pub first_answer_s: Option<f64>,
    /// Reasoning tokens (server usage, else the tokenizer).
    pub reasoning_tokens: Option<u64>,
    /// Completion tokens minus reasoning tokens.
    pub answer_tokens: Option<u64>,
}

/// One successful request's tool calls and JSON output (computed by [`crate::tool_calls`] when the
/// request ends, from the payloads the record keeps), stored in the `tool_call_*`, `schema_valid`,
/// `truncated` and `validation_error` columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StructuredOutcome {
    /// The request offered tools (a non-empty `tools` list, `tool_choice` not `"none"`).
    pub tools_offered: bool,
    /// The request had a `tools` list (offered or not).
    pub has_tools: bool,
    /// Tool calls in the response (reassembled from the stream's fragments).
    pub tool_calls: u32,
    /// Of those, the calls naming an offered function whose arguments parse as JSON and validate
    /// against its `parameters`.
    pub valid_tool_calls: u32,
    /// The calls judged invalid. A call cut mid-way by the length limit is neither (the last call of a
    /// truncated response whose arguments are not yet JSON).
    pub invalid_tool_calls: u32,
    /// Seconds from sending to the first chunk carrying a tool call (non-stream: the latency).
    pub first_tool_call_s: Option<f64>,
    /// Tokens of the calls' arguments (with `--tokenizer-path`; else unknown).
    pub tool_call_tokens: Option<u64>,
    /// The reassembled calls as a JSON list of `{"index", "id", "name", "arguments"}` (`None`: no call).
    pub calls_json: Option<String>,
    /// `response_format` asked for JSON: whether the output parsed and validated.
    pub schema_valid: Option<bool>,
    /// The output was cut by the length limit (`finish_reason: "length"`).
    pub truncated: bool,
    /// Why the first invalid call or output did not validate.
    pub error: Option<String>,
}

/// `s` with `\r` and `\n` escaped, so an error message stays on one line of a log or a stored row.
pub fn one_line(s: &str) -> String {
    s.replace('\r', "\\r").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn record_with_chunks(offsets_ms: &[u64], end_ms: u64, tokens: u64) -> RequestRecord {
        let t0 = Instant::now();
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), t0);
        r.sent_at = t0;
        r.is_stream = true;
        r.success = true;
        r.chunk_times = offsets_ms
            .iter()
            .map(|&ms| t0 + Duration::from_millis(ms))
            .collect();
        r.completed_at = t0 + Duration::from_millis(end_ms);
        r.usage.completion_tokens = Some(tokens);
        r
    }

    #[test]
    fn derives_evalscope_per_request_metrics() {
        let r = record_with_chunks(&[50, 60, 75, 85], 90, 4);
        assert!((r.ttft_s() - 0.050).abs() < 1e-9);
        assert!((r.latency_s() - 0.090).abs() < 1e-9);
        let itl: Vec<f64> = r.itl_s().collect();
        assert_eq!(itl.len(), 3);
        assert!((itl[1] - 0.015).abs() < 1e-9);
        // (0.090 - 0.050) / (4 - 1)
        assert!((r.tpot_s() - 0.040 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn single_token_and_non_stream_have_zero_tpot() {
        let r = record_with_chunks(&[50], 60, 1);
        assert_eq!(r.tpot_s(), 0.0);
        let mut ns = record_with_chunks(&[], 80, 5);
        ns.is_stream = false;
        assert!((ns.ttft_s() - ns.latency_s()).abs() < 1e-12);
        assert_eq!(ns.tpot_s(), 0.0);
    }

    #[test]
    fn stream_without_output_has_zero_ttft() {
        let r = record_with_chunks(&[], 30, 0);
        assert_eq!(r.ttft_s(), 0.0);
    }

    #[test]
    fn kept_responses_round_trip() {
        let mut r = record_with_chunks(&[], 1, 0);
        r.keep_response(br#"{"a":1}"#);
        r.keep_response(br#"{"b":2}"#);
        let v: Vec<&[u8]> = r.responses().collect();
        assert_eq!(v, vec![&br#"{"a":1}"#[..], &br#"{"b":2}"#[..]]);
    }
}
