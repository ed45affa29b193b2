//! How faithfully a trace was replayed (`mooncake_trace`, `burstgpt_trace`, `azure_trace`): the send lag of
//! every request against its trace offset, and the share of prompt tokens the server reported as cached
//! against the share the trace implies (its repeated leading hash-id blocks). Written as extra summary
//! keys after evalscope's.
//!
//! The send lags are not kept here: they are the client diagnostics' send-lag column (the same measured
//! records, the same value), which spills to disk like the percentile table, so a replay of any length
//! stays in flat memory.

use serde_json::Value;

use super::nearest_rank::PERCENTILES;
use crate::record::RequestRecord;

/// `Trace Requests`: requests of the trace replayed in the run.
pub const REQUESTS: &str = "Trace Requests";
/// Send lag (actual − trace offset) median, ms.
pub const SEND_LAG_P50: &str = "Trace Send Lag p50 (ms)";
/// Send lag p99, ms.
pub const SEND_LAG_P99: &str = "Trace Send Lag p99 (ms)";
/// Largest send lag, ms.
pub const SEND_LAG_MAX: &str = "Trace Send Lag Max (ms)";
/// Σ implied cached / Σ recorded input tokens, %.
pub const IMPLIED_CACHED: &str = "Trace Implied Cached Tokens (%)";
/// Σ server-reported cached / Σ server prompt tokens over the successes, % (null: none reported).
pub const SERVER_CACHED: &str = "Trace Server Cached Tokens (%)";

/// Collects what the fidelity keys need from the measured records.
#[derive(Debug, Default)]
pub struct ReplayFidelity {
    prompt_tokens: u64,
    cached_tokens: u64,
    cached_reported: bool,
}

fn round4(x: f64) -> Value {
    Value::from((x * 1e4).round() / 1e4)
}

impl ReplayFidelity {
    /// Notes one measured record.
    pub fn feed(&mut self, r: &RequestRecord) {
        if let (true, Some(cached)) = (r.success, r.usage.cached_tokens) {
            self.cached_reported = true;
            self.cached_tokens += cached;
            self.prompt_tokens += r.prompt_tokens();
        }
    }

    /// The summary keys, given the send lags' nearest-rank values at [`PERCENTILES`] (seconds, NaN when
    /// none) and each replayed request's recorded input tokens and implied cached tokens.
    pub fn keys(
        &self,
        send_lag_s: [f64; 11],
        input_tokens: &[u64],
        implied_cached: &[u64],
    ) -> Vec<(String, Value)> {
        let at = |p: u32| {
            let i = PERCENTILES
                .iter()
                .position(|&q| q == p)
                .expect("a listed percentile");
            send_lag_s[i]
        };
        let ms = |x: f64| {
            if x.is_finite() {
                round4(x * 1e3)
            } else {
                Value::Null
            }
        };
        let input: u64 = input_tokens.iter().sum();
        let implied: u64 = implied_cached.iter().sum();
        let server = if self.cached_reported && self.prompt_tokens > 0 {
            round4(self.cached_tokens as f64 * 100.0 / self.prompt_tokens as f64)
        } else {
            Value::Null
        };
        vec![
            (REQUESTS.into(), Value::from(input_tokens.len())),
            (SEND_LAG_P50.into(), ms(at(50))),
            (SEND_LAG_P99.into(), ms(at(99))),
            (SEND_LAG_MAX.into(), ms(at(100))),
            (
                IMPLIED_CACHED.into(),
                round4(implied as f64 * 100.0 / input.max(1) as f64),
            ),
            (SERVER_CACHED.into(), server),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_known_inputs() {
        let f = ReplayFidelity {
            prompt_tokens: 100,
            cached_tokens: 25,
            cached_reported: true,
        };
        // The nearest-rank values of the lags [0.002, 0.001, 0.0005] at each of PERCENTILES.
        let sorted = [0.0005, 0.001, 0.002];
        let lags = PERCENTILES.map(|p| crate::metrics::nearest_rank(&sorted, p));
        let keys = f.keys(lags, &[40, 60], &[0, 30]);
        let get = |k: &str| keys.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(REQUESTS), 2);
        assert_eq!(get(SEND_LAG_P50), 1.0);
        assert_eq!(get(SEND_LAG_MAX), 2.0);
        assert_eq!(get(IMPLIED_CACHED), 30.0);
        assert_eq!(get(SERVER_CACHED), 25.0);
        let none = ReplayFidelity::default().keys([f64::NAN; 11], &[1], &[0]);
        assert_eq!(none[5].1, Value::Null);
        assert_eq!(none[1].1, Value::Null, "no send lags: p50 is null");
    }
}
