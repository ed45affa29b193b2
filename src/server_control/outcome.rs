//! What a run records about server control: the prefix-cache reset done before it (or why it failed, when
//! best-effort), the profiler's window, and a `--target-cache-hit-rate` run's expected vs measured cached
//! share. Appended to the run's summary after evalscope's keys, only when the feature was asked for.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// One prefix-cache reset that was done.
#[derive(Debug, Clone, PartialEq)]
pub struct ResetRecord {
    /// What was called (`POST http://…/reset_prefix_cache`).
    pub endpoint: String,
    /// When the call was sent, monotonic seconds (the database's clock).
    pub at_s: f64,
    /// When it had answered.
    pub done_s: f64,
    /// The server's prefix-cache counters just before (empty where `/metrics` has none).
    pub counters_before: BTreeMap<String, f64>,
    /// The same just after.
    pub counters_after: BTreeMap<String, f64>,
}

/// When the profiler ran in a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileWindow {
    /// `/start_profile` answered, monotonic seconds (`None`: never started).
    pub start_s: Option<f64>,
    /// `/stop_profile` answered.
    pub stop_s: Option<f64>,
    /// Requests in flight when it started.
    pub in_flight_at_start: Option<usize>,
    /// Why the window is not what was asked (threshold never reached, a best-effort failure).
    pub note: Option<String>,
}

/// Server control in one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunControl {
    /// The reset before this run: done, or failed (best-effort), `None` when none was due.
    pub reset: Option<Result<ResetRecord, String>>,
    /// `--server-profile`: the window.
    pub profile: Option<ProfileWindow>,
    /// `--target-cache-hit-rate`: `(expected, measured, requests counted)`; measured `None` when no
    /// request after the cold start reported its tokens.
    pub hit_rate: Option<(f64, Option<f64>, u64)>,
}

fn counters(m: &BTreeMap<String, f64>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

impl RunControl {
    /// The summary keys, in this order: `prefix_cache_reset`, `server_profile`, `prefix_cache_hit_rate`.
    pub fn summary_keys(&self) -> Vec<(String, Value)> {
        let mut keys = Vec::new();
        match &self.reset {
            Some(Ok(r)) => keys.push((
                "prefix_cache_reset".to_string(),
                json!({
                    "done": true,
                    "endpoint": r.endpoint,
                    "at": r.at_s,
                    "answered_at": r.done_s,
                    "counters_before": counters(&r.counters_before),
                    "counters_after": counters(&r.counters_after),
                }),
            )),
            Some(Err(e)) => keys.push((
                "prefix_cache_reset".to_string(),
                json!({"done": false, "error": e}),
            )),
            None => {}
        }
        if let Some(p) = &self.profile {
            let mut m = Map::new();
            m.insert("start".into(), json!(p.start_s));
            m.insert("stop".into(), json!(p.stop_s));
            let secs = p.start_s.zip(p.stop_s).map(|(a, b)| b - a);
            m.insert("seconds".into(), json!(secs));
            m.insert("in_flight_at_start".into(), json!(p.in_flight_at_start));
            if let Some(n) = &p.note {
                m.insert("note".into(), json!(n));
            }
            keys.push(("server_profile".to_string(), Value::Object(m)));
        }
        if let Some((expected, measured, n)) = self.hit_rate {
            keys.push((
                "prefix_cache_hit_rate".to_string(),
                json!({"expected": expected, "measured": measured, "requests": n}),
            ));
        }
        keys
    }
}

/// The run's arguments keys for the cache protocol (only what was asked for, so a run without these flags
/// writes exactly what it wrote before): `reset_prefix_cache`, `server_kind`, `server_control_best_effort`,
/// `server_profile`, `target_cache_hit_rate`.
pub fn args_keys(plan: &super::ServerControlPlan, put: &mut impl FnMut(&str, Value)) {
    if plan.reset != super::ResetWhen::Never {
        put("reset_prefix_cache", json!(plan.reset.name()));
    }
    if let Some(k) = plan.kind {
        put("server_kind", json!(k.name()));
    }
    if plan.best_effort {
        put("server_control_best_effort", json!(true));
    }
    if let Some(p) = plan.profile {
        put(
            "server_profile",
            json!({"at_inflight": p.at_inflight, "seconds": p.seconds}),
        );
    }
    if let Some(f) = plan.target_hit_rate {
        put("target_cache_hit_rate", json!(f));
    }
}
