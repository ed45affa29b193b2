//! One request → one [`RequestRecord`]: send the body, stamp each read as it arrives, frame SSE, read
//! usage. The hot path is short: no tokenizing, no locks, no per-chunk allocation beyond parsing.
//!
//! Every problem becomes a failed record with a [`FailureKind`] and one line of text (never a panic, never
//! an aborted run): HTTP status (with the server's body and `Retry-After`), connect, total timeout, read
//! timeout, reset, disconnect, malformed event or body, in-band error, unusable response (no usage, a
//! stream that ended without `[DONE]` and usage, an unexpected `Content-Type`). A stream that ends without
//! `[DONE]` but carried usage succeeds, as in evalscope (the end of the body ends the response).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};

use crate::api::openai_event;
use crate::engine::sse::SseFramer;
use crate::plan::RunPlan;
use crate::record::{FailureKind, RequestRecord};

/// Attempts per request when a pooled connection turns out to be closed before any answer.
const STALE_RETRIES: u32 = 3;

/// Longest error body kept in a record (the rest is cut, with a note).
const MAX_ERROR_BYTES: usize = 4096;

/// A shared request body handed to the HTTP stack without copying.
struct SharedBody(Arc<str>);

impl AsRef<[u8]> for SharedBody {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The HTTP side of a run: a connection pool and the request template.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    url: reqwest::Url,
    total_timeout: Duration,
    read_timeout: Option<Duration>,
    debug: bool,
    /// A success without usage is kept (its tokens are counted later, off the request path).
    usage_counted_later: bool,
}

fn header_map(plan: &RunPlan) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("llmperf/", env!("CARGO_PKG_VERSION"))),
    );
    for (k, v) in &plan.headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).with_context(|| format!("--headers {k}"))?;
        let mut value = HeaderValue::from_str(v).with_context(|| format!("--headers {k}"))?;
        if is_secret_header(k) {
            value.set_sensitive(true);
        }
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Header names whose values are secrets (masked in every file and log).
pub fn is_secret_header(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "authorization" | "proxy-authorization" | "x-api-key" | "x-auth-token" | "api-key"
    )
}

impl HttpClient {
    /// A client for `plan`'s endpoint with a pool sized for `max_in_flight` connections.
    pub fn new(plan: &RunPlan, url: reqwest::Url, max_in_flight: usize) -> Result<Self> {
        let mut builder = reqwest::Client::builder()
            .default_headers(header_map(plan)?)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(max_in_flight.max(1))
            .pool_idle_timeout(Duration::from_secs(60))
            .http1_only()
            .no_proxy();
        if let Some(t) = plan.timeouts.connect {
            builder = builder.connect_timeout(t);
        }
        if let Some(t) = plan.timeouts.read {
            builder = builder.read_timeout(t);
        }
        Ok(HttpClient {
            client: builder.build().context("building the HTTP client")?,
            url,
            total_timeout: plan.timeouts.total,
            read_timeout: plan.timeouts.read,
            debug: plan.debug,
            usage_counted_later: plan.tokens.tokenizer_path.is_some() || plan.api.input_only(),
        })
    }

    /// The endpoint.
    pub fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// Sends `record.request` and fills `record` with what came back. Never fails: every problem becomes
    /// a failed record with its kind and text.
    pub async fn send(&self, mut record: RequestRecord) -> RequestRecord {
        let body = record.request.clone();
        if !record.success && !record.is_stream {
            // evalscope counts a failure as a stream request when its body asked for one.
            record.is_stream = body_requests_stream(&record.request);
        }
        if self.debug {
            tracing::debug!(
                index = record.index,
                "request start: {}",
                truncate(&body, 100)
            );
        }
        let deadline = tokio::time::Instant::now() + self.total_timeout;
        record.sent_at = Instant::now();
        let outcome = tokio::time::timeout_at(deadline, self.exchange(&mut record, body)).await;
        if outcome.is_err() {
            let at = Instant::now();
            record.fail(
                FailureKind::Timeout,
                format!(
                    "total timeout of {} s exceeded (--total-timeout)",
                    self.total_timeout.as_secs_f64()
                ),
                at,
            );
        }
        if self.debug {
            tracing::debug!(
                index = record.index,
                success = record.success,
                chunks = record.chunk_times.len(),
                "request end"
            );
        }
        record
    }

    async fn exchange(&self, record: &mut RequestRecord, body: Arc<str>) {
        let body = bytes::Bytes::from_owner(SharedBody(body));
        let mut attempt = 1;
        let mut resp = loop {
            let sent = self
                .client
                .post(self.url.clone())
                .body(reqwest::Body::from(body.clone()))
                .send()
                .await;
            match sent {
                Ok(r) => break r,
                // A pooled connection the server had already closed (llama.cpp closes after every
                // streamed response despite `Keep-Alive`): nothing was answered, so the request was not
                // served. Send it again on a fresh connection, timed from the new attempt.
                Err(e) if attempt < STALE_RETRIES && is_stale_connection(&e) => {
                    attempt += 1;
                    record.sent_at = Instant::now();
                }
                Err(e) => {
                    let at = Instant::now();
                    self.fail_with(record, &e, at);
                    return;
                }
            }
        };
        let status = resp.status();
        record.status_code = Some(status.as_u16());
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if status != reqwest::StatusCode::OK {
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|v| format!(" (Retry-After: {v})"))
                .unwrap_or_default();
            let text = match resp.bytes().await {
                Ok(b) => clip(&b),
                Err(e) => format!("(body unreadable: {})", error_chain(&e)),
            };
            let at = Instant::now();
            let reason = status.canonical_reason().unwrap_or("");
            let msg = if text.is_empty() {
                format!("HTTP {} {reason}{retry_after}", status.as_u16())
            } else {
                format!("HTTP {} {reason}{retry_after}: {text}", status.as_u16())
            };
            record.fail(FailureKind::HttpStatus, msg, at);
            return;
        }
        if content_type.contains("text/event-stream") {
            record.is_stream = true;
            self.read_stream(record, &mut resp).await;
        } else {
            record.is_stream = false;
            match resp.bytes().await {
                Ok(bytes) => {
                    let at = Instant::now();
                    record.completed_at = at;
                    if !openai_event::apply_body(record, &bytes) {
                        record.fail(
                            unusable_body_kind(&content_type, &bytes),
                            unusable_body(&content_type, &bytes),
                            at,
                        );
                        return;
                    }
                }
                Err(e) => {
                    let at = Instant::now();
                    self.fail_with(record, &e, at);
                    return;
                }
            }
        }
        finish(record, self.usage_counted_later);
    }

    /// Fails `record` with a transport error, its kind and one line of text.
    fn fail_with(&self, record: &mut RequestRecord, e: &reqwest::Error, at: Instant) {
        let kind = classify(e);
        let mut text = error_chain(e);
        if kind == FailureKind::ReadTimeout {
            if let Some(t) = self.read_timeout {
                text = format!("no data for {} s (--read-timeout): {text}", t.as_secs_f64());
            }
        }
        record.fail(kind, text, at);
    }

    async fn read_stream(&self, record: &mut RequestRecord, resp: &mut reqwest::Response) {
        let mut framer = SseFramer::new();
        record.completed_at = record.sent_at;
        let mut saw_done = false;
        loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    let at = Instant::now();
                    if self.debug {
                        tracing::debug!(
                            index = record.index,
                            "chunk: {}",
                            truncate(&String::from_utf8_lossy(&bytes), 200)
                        );
                    }
                    framer.push(&bytes, |event| {
                        saw_done |= event == b"[DONE]";
                        openai_event::apply_stream_event(record, event, at)
                    });
                }
                Ok(None) => {
                    let at = Instant::now();
                    framer.finish(|event| {
                        saw_done |= event == b"[DONE]";
                        openai_event::apply_stream_event(record, event, at)
                    });
                    if !saw_done && record.failure.is_none() && !has_usage(record) {
                        record.fail(
                            FailureKind::BadResponse,
                            "the stream ended without `data: [DONE]` and carried no token usage",
                            at,
                        );
                    }
                    return;
                }
                Err(e) => {
                    let at = Instant::now();
                    self.fail_with(record, &e, at);
                    return;
                }
            }
        }
    }
}

/// Success rules after a complete response: an in-band error fails; a response without usage fails
/// unless `counted_later` (a tokenizer, or an input-only API, will count it in the aggregator) — evalscope
/// would abort the whole run instead.
fn finish(record: &mut RequestRecord, counted_later: bool) {
    if record.failure.is_some() {
        record.success = false;
        return;
    }
    if !counted_later && !has_usage(record) {
        record.success = false;
        record.failure = Some(FailureKind::BadResponse);
        record.error = Some(
            "the response carried no token usage (`usage`), and no tokenizer is configured to count tokens"
                .to_string(),
        );
        return;
    }
    record.success = true;
}

fn has_usage(record: &RequestRecord) -> bool {
    record.usage.prompt_tokens.is_some() || record.usage.completion_tokens.is_some()
}

/// The kind of a 200 body that is not JSON: malformed when it was labelled or shaped as JSON, else an
/// unusable response (wrong `Content-Type`).
fn unusable_body_kind(content_type: &str, body: &[u8]) -> FailureKind {
    let jsonish = content_type.contains("json")
        || body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if jsonish {
        FailureKind::Malformed
    } else {
        FailureKind::BadResponse
    }
}

/// The error text for a 200 body that is not JSON.
fn unusable_body(content_type: &str, body: &[u8]) -> String {
    match unusable_body_kind(content_type, body) {
        FailureKind::Malformed => openai_event::describe_malformed("response body", body),
        _ => {
            let shown = if content_type.is_empty() {
                "no Content-Type".to_string()
            } else {
                format!("Content-Type {content_type:?}")
            };
            format!(
                "unexpected {shown} (expected text/event-stream or application/json) and a body that is not JSON: {}",
                clip(&body[..body.len().min(200)])
            )
        }
    }
}

fn body_requests_stream(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("stream").and_then(|s| s.as_bool()))
        == Some(true)
}

/// `true` when the connection closed before any part of the response arrived (a stale pooled connection).
fn is_stale_connection(e: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        cur = err.source();
    }
    false
}

/// The kind of a transport error. The total timeout is enforced outside reqwest, so a reqwest timeout is a
/// connect or a read timeout.
fn classify(e: &reqwest::Error) -> FailureKind {
    if e.is_connect() {
        FailureKind::Connect
    } else if e.is_timeout() {
        FailureKind::ReadTimeout
    } else if io_kind_in_chain(e) == Some(std::io::ErrorKind::ConnectionReset) {
        FailureKind::Reset
    } else {
        FailureKind::Disconnect
    }
}

/// The kind of the first `std::io::Error` among `e`'s causes.
fn io_kind_in_chain(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = c.source();
    }
    None
}

/// The error and its causes, one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let part = c.to_string();
        if !s.contains(&part) {
            s.push_str(": ");
            s.push_str(&part);
        }
        cur = c.source();
    }
    s
}

/// Up to [`MAX_ERROR_BYTES`] of `bytes` as one line of text (line breaks escaped, invalid UTF-8 replaced).
fn clip(bytes: &[u8]) -> String {
    let text = one_line(&String::from_utf8_lossy(
        &bytes[..bytes.len().min(MAX_ERROR_BYTES)],
    ));
    if bytes.len() > MAX_ERROR_BYTES {
        format!("{text}… ({} bytes in all)", bytes.len())
    } else {
        text
    }
}

/// `s` with `\r` and `\n` escaped, so an error stays on one line of a log.
pub fn one_line(s: &str) -> String {
    s.replace('\r', "\\r").replace('\n', "\\n")
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= 2 * n {
        return s.to_string();
    }
    let head: String = s.chars().take(n).collect();
    let tail: String = s
        .chars()
        .rev()
        .take(n)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_recognised() {
        assert!(is_secret_header("Authorization"));
        assert!(is_secret_header("x-api-key"));
        assert!(!is_secret_header("X-Team"));
    }

    #[test]
    fn missing_usage_fails_the_request() {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        r.is_stream = true;
        finish(&mut r, false);
        assert!(!r.success);
        assert_eq!(r.failure, Some(FailureKind::BadResponse));
        r.failure = None;
        finish(&mut r, true);
        assert!(r.success, "kept for counting later");
        r.usage.completion_tokens = Some(3);
        finish(&mut r, false);
        assert!(r.success);
    }

    #[test]
    fn stream_flag_read_from_body() {
        assert!(body_requests_stream(r#"{"stream": true}"#));
        assert!(!body_requests_stream(r#"{"stream": false}"#));
        assert!(!body_requests_stream("nope"));
    }

    #[test]
    fn truncate_keeps_head_and_tail() {
        assert_eq!(truncate("abcdef", 1), "a…f");
        assert_eq!(truncate("ab", 1), "ab");
    }
}
