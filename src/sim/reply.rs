//! Small response helpers shared by the simulator's routes: JSON bodies, OpenAI-style errors, the
//! `created` clock and absolute-deadline sleeps.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use super::stream::SimBody;

/// Sleeps until `at`, without touching the timer when `at` has passed (zero delays).
pub(super) async fn sleep_until(at: Instant) {
    if at > Instant::now() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// A JSON response.
pub(super) fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<SimBody> {
    let mut resp = Response::new(SimBody::full(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An OpenAI-style JSON error: `{"error":{"message":…,"type":…,"code":status}}`.
pub(super) fn error(status: StatusCode, message: &str, kind: &str) -> Response<SimBody> {
    let body = format!(
        r#"{{"error":{{"message":{},"type":"{kind}","code":{}}}}}"#,
        json_string(message),
        status.as_u16()
    );
    json(status, body)
}

/// 400 for a missing required field.
pub(super) fn missing(field: &str) -> Response<SimBody> {
    let msg = format!("'{field}' is a required property");
    error(StatusCode::BAD_REQUEST, &msg, "invalid_request_error")
}

/// `s` as a JSON string literal.
pub(super) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Unix seconds now, for `created`.
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
