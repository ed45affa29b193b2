//! The simulator's server-control endpoints, as the real engines spell them, each call recorded with its
//! time ([`ControlCall`], [`super::SimServer::control_calls`]) and logged:
//!
//! * `POST /reset_prefix_cache` (vLLM; a real vLLM serves it only in dev mode, `VLLM_SERVER_DEV_MODE=1`):
//!   empties the prefix cache, `200` with an empty body;
//! * `POST /flush_cache` (SGLang): empties the prefix cache, `200` `Cache flushed.`; refused with `400`
//!   while generation requests are in flight, as SGLang refuses it with running or waiting requests;
//! * `POST /start_profile`, `POST /stop_profile` (vLLM, SGLang): `200`; nothing is profiled, the call is
//!   only recorded (a stop without a start, or a second start, answers `400`, as vLLM's profiler would
//!   fail).

use std::sync::Mutex;

use hyper::{Response, StatusCode};

use super::reply::json;
use super::stream::SimBody;
use super::Shared;
use crate::clock;

/// One call to a control endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlCall {
    /// The path called (`/reset_prefix_cache`, `/flush_cache`, `/start_profile`, `/stop_profile`).
    pub path: String,
    /// When it was received, monotonic seconds ([`crate::clock`]).
    pub at_s: f64,
    /// Generation requests in flight at that moment.
    pub in_flight: i64,
    /// The status answered.
    pub status: u16,
}

/// The control paths the simulator serves.
pub(super) const PATHS: &[&str] = &[
    "/reset_prefix_cache",
    "/flush_cache",
    "/start_profile",
    "/stop_profile",
];

/// The calls so far and the profiler's state.
#[derive(Debug, Default)]
pub(super) struct ControlLog {
    calls: Mutex<Vec<ControlCall>>,
    profiling: Mutex<bool>,
}

impl ControlLog {
    /// Every call so far, in order.
    pub(super) fn snapshot(&self) -> Vec<ControlCall> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Answers `POST path` (one of [`PATHS`]) and records the call.
pub(super) fn handle(shared: &Shared, path: &str) -> Response<SimBody> {
    let at_s = clock::now_s();
    let in_flight = shared.metrics.running();
    let (status, body) = match path {
        "/reset_prefix_cache" => {
            shared.prefix.clear();
            (StatusCode::OK, String::new())
        }
        "/flush_cache" if in_flight > 0 => (
            StatusCode::BAD_REQUEST,
            format!("Cache not flushed: {in_flight} request(s) running."),
        ),
        "/flush_cache" => {
            shared.prefix.clear();
            (StatusCode::OK, "Cache flushed.".to_string())
        }
        _ => profile(&shared.control, path == "/start_profile"),
    };
    tracing::info!(
        "simulator: POST {path} with {in_flight} generation request(s) in flight: {}",
        status.as_u16()
    );
    shared
        .control
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ControlCall {
            path: path.to_string(),
            at_s,
            in_flight,
            status: status.as_u16(),
        });
    json(status, body)
}

/// Starts (`start`) or stops the pretend profiler.
fn profile(log: &ControlLog, start: bool) -> (StatusCode, String) {
    let mut on = log.profiling.lock().unwrap_or_else(|e| e.into_inner());
    match (start, *on) {
        (true, false) | (false, true) => {
            *on = start;
            let what = if start { "started" } else { "stopped" };
            (StatusCode::OK, format!("Profiler {what}."))
        }
        (true, true) => (
            StatusCode::BAD_REQUEST,
            "Profiler is already running.".to_string(),
        ),
        (false, false) => (
            StatusCode::BAD_REQUEST,
            "Profiler is not running.".to_string(),
        ),
    }
}
