//! The run's tool-call and structured-output statistics, fed one record at a time by the aggregator, and
//! the summary keys they give (after evalscope's, only when a request offered tools or asked for JSON):
//!
//! * `Tool Requests`, `Tool Call Rate (%)`: successful requests that offered tools, and the share of them
//!   that got at least one call;
//! * `Tool Calls`, `Valid Tool Calls (%)`: calls made, and the share whose arguments parse and validate
//!   (of the calls judged: all but a call the length limit cut mid-way);
//! * `Avg` / `P50` / `P99 Time to First Tool Call (ms)` (nearest rank), `Avg Tool Call Tokens`;
//! * `Schema Requests`, `Schema Valid (%)`: successful requests whose `response_format` asked for JSON,
//!   and the share of the untruncated ones whose output parses and validates;
//! * `Truncated (%)`: successful requests with tools or a JSON format cut by the length limit.
//!
//! Percentages are rounded to 2 decimals, token averages to 4 (as evalscope rounds its plain floats).

use serde_json::Value;

use crate::pyjson::round;
use crate::record::RequestRecord;

/// Counts over the successful requests that offered tools or asked for JSON.
#[derive(Debug, Clone, Default)]
pub struct ToolCallStats {
    /// Requests with an outcome.
    requests: u64,
    /// Requests that offered tools, and those of them that got a call.
    offered: u64,
    offered_called: u64,
    /// Calls, valid and invalid calls (a call cut mid-way by the length limit is neither).
    calls: u64,
    valid_calls: u64,
    invalid_calls: u64,
    /// Seconds to the first tool call, per request that got one.
    first_call_s: Vec<f64>,
    /// Argument tokens per request that got a call (when counted).
    call_tokens: Vec<u64>,
    /// Requests asking for JSON; of those untruncated, how many, and how many valid.
    schema_requests: u64,
    schema_untruncated: u64,
    schema_valid: u64,
    truncated: u64,
}

impl ToolCallStats {
    /// Counts one finished record (nothing unless it has an outcome).
    pub fn add(&mut self, record: &RequestRecord) {
        let Some(o) = record.structured.as_deref() else {
            return;
        };
        self.requests += 1;
        if o.tools_offered {
            self.offered += 1;
            self.offered_called += u64::from(o.tool_calls > 0);
        }
        self.calls += u64::from(o.tool_calls);
        self.invalid_calls += u64::from(o.invalid_tool_calls);
        self.valid_calls += u64::from(o.valid_tool_calls);
        self.first_call_s.extend(o.first_tool_call_s);
        self.call_tokens.extend(o.tool_call_tokens);
        if let Some(valid) = o.schema_valid {
            self.schema_requests += 1;
            if !o.truncated {
                self.schema_untruncated += 1;
                self.schema_valid += u64::from(valid);
            }
        }
        self.truncated += u64::from(o.truncated);
    }

    /// The summary keys; empty when no request offered tools or asked for JSON.
    pub fn summary_keys(&self) -> Vec<(String, Value)> {
        if self.requests == 0 {
            return Vec::new();
        }
        let pct = |n: u64, d: u64| Value::from(round(100.0 * n as f64 / d as f64, 2));
        let mut keys: Vec<(String, Value)> = Vec::new();
        let mut put = |k: &str, v: Value| keys.push((k.to_string(), v));
        if self.offered > 0 {
            put("Tool Requests", self.offered.into());
            put("Tool Call Rate (%)", pct(self.offered_called, self.offered));
        }
        if self.offered > 0 || self.calls > 0 {
            put("Tool Calls", self.calls.into());
        }
        let judged = self.valid_calls + self.invalid_calls;
        if judged > 0 {
            put("Valid Tool Calls (%)", pct(self.valid_calls, judged));
        }
        if !self.first_call_s.is_empty() {
            let mut sorted = self.first_call_s.clone();
            sorted.sort_by(f64::total_cmp);
            let ms = |s: f64| Value::from(round(s * 1000.0, 2));
            let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
            put("Avg Time to First Tool Call (ms)", ms(mean));
            put(
                "P50 Time to First Tool Call (ms)",
                ms(nearest_rank(&sorted, 0.5)),
            );
            put(
                "P99 Time to First Tool Call (ms)",
                ms(nearest_rank(&sorted, 0.99)),
            );
        }
        if !self.call_tokens.is_empty() {
            let avg = self.call_tokens.iter().sum::<u64>() as f64 / self.call_tokens.len() as f64;
            put("Avg Tool Call Tokens", round(avg, 4).into());
        }
        if self.schema_requests > 0 {
            put("Schema Requests", self.schema_requests.into());
            if self.schema_untruncated > 0 {
                put(
                    "Schema Valid (%)",
                    pct(self.schema_valid, self.schema_untruncated),
                );
            }
        }
        put("Truncated (%)", pct(self.truncated, self.requests));
        keys
    }
}

/// The nearest-rank quantile of sorted values (`ceil(q·n)`-th, 1-based).
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
