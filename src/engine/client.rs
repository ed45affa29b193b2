//! One request → one [`RequestRecord`]: send the body, stamp each read as it arrives, frame SSE, read
//! usage. The hot path is short: one task per request on its own kept-alive connection ([`super::http1`]),
//! the time read right after each socket read and before any parsing, no tokenizing, no locks, no
//! allocation per chunk beyond keeping the payload.
//!
//! Every problem becomes a failed record with a [`FailureKind`] and one line of text (never a panic, never
//! an aborted run): HTTP status (with the server's body and `Retry-After`), connect, total timeout, read
//! timeout, reset, disconnect, malformed event or body, in-band error, unusable response (no usage, a
//! stream that ended without `[DONE]` and usage, an unexpected `Content-Type`). A stream that ends without
//! `[DONE]` but carried usage succeeds, as in evalscope (the end of the body ends the response); a Responses
//! API stream that ends without `response.completed` succeeds when a tokenizer will count it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::endpoints::Endpoints;
use super::http1::{self, Conn, Head};
use crate::api::openai_event;
use crate::engine::sse::SseFramer;
use crate::plan::{ApiKind, RunPlan};
use crate::record::{one_line, FailureKind, RequestRecord};

/// Longest error body kept in a record (the rest is cut, with a note).
const MAX_ERROR_BYTES: usize = 4096;

/// Largest non-stream or error body read (a longer one fails the request instead of filling memory).
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// A request already on the wire: its (reused) connection and how many bytes went out.
pub struct Started {
    conn: Conn,
    written: usize,
}

/// The HTTP side of a run: a connection pool for the endpoint. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// One pool per endpoint (one endpoint unless `--url-strategy`).
    endpoints: Endpoints,
    total_timeout: Duration,
    debug: bool,
    /// A success without usage is kept (its tokens are counted later, off the request path).
    usage_counted_later: bool,
    /// Sizes of the last complete response (chunk times, kept payloads, payload bytes), so the next
    /// record's vectors are allocated once instead of growing chunk by chunk.
    size_hint: [AtomicUsize; 3],
    /// Test hooks (CPU work before each send).
    hooks: super::hooks::Hooks,
    /// The API whose events are read.
    api: ApiKind,
    /// Requests between the start of their send and their record (read by `--server-profile-at-inflight`).
    in_flight: AtomicUsize,
    /// Requests started (what a live view counts in flight against its records).
    sent: Arc<AtomicU64>,
    /// The header each request's id goes in (`None`: no ids sent).
    id_header: Option<Arc<str>>,
}

/// Counts a request in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The most a size hint reserves up front.
const MAX_HINT: usize = 1 << 16;

impl HttpClient {
    /// A client for `plan`'s endpoint with a pool sized for `max_in_flight` connections.
    /// With `--url-strategy`, one pool per `--url` (`url` is the first), each sized for `max_in_flight`.
    pub fn new(plan: &RunPlan, url: reqwest::Url, max_in_flight: usize) -> Result<Self> {
        let urls = match &plan.traffic.endpoints {
            Some(e) => e.urls.clone(),
            None => vec![url],
        };
        let mut pools = Vec::with_capacity(urls.len());
        for url in urls {
            let endpoint = http1::Endpoint::new(
                &url,
                &plan.headers,
                plan.timeouts.connect,
                plan.timeouts.read,
            )
            .map_err(|e| anyhow!("--url {url}: {e}"))?;
            pools.push((http1::Pool::new(endpoint, max_in_flight), url));
        }
        let strategy = plan.traffic.endpoints.as_ref().map(|e| e.strategy);
        Ok(HttpClient {
            inner: Arc::new(Inner {
                endpoints: Endpoints::new(pools, strategy),
                total_timeout: plan.timeouts.total,
                debug: plan.debug,
                usage_counted_later: plan.tokens.tokenizer_path.is_some() || plan.api.input_only(),
                size_hint: Default::default(),
                api: plan.api,
                hooks: super::hooks::Hooks::from_env(),
                in_flight: AtomicUsize::new(0),
                sent: Arc::new(AtomicU64::new(0)),
                id_header: plan.traffic.request_id_header.as_deref().map(Arc::from),
            }),
        })
    }

    /// Requests in flight now (sent, or being sent, and not yet finished).
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Relaxed)
    }

    /// The count of requests this client has started (the connection test's included).
    pub fn sent_counter(&self) -> Arc<AtomicU64> {
        self.inner.sent.clone()
    }

    /// The (first) endpoint.
    pub fn url(&self) -> &reqwest::Url {
        &self.inner.endpoints.slot(0).url
    }

    /// How many endpoints (1 unless `--url-strategy`).
    pub fn endpoint_count(&self) -> usize {
        self.inner.endpoints.len()
    }

    /// Endpoint `i`'s URL.
    pub fn url_of(&self, i: u16) -> &reqwest::Url {
        &self.inner.endpoints.slot(i).url
    }

    /// The endpoint for a conversation or session that keeps one (see [`super::endpoints`]).
    pub fn pick_endpoint(&self) -> u16 {
        self.inner.endpoints.pick()
    }

    /// The pool of `record`'s endpoint (picked now when it has none).
    fn pool_for(&self, record: &mut RequestRecord) -> &http1::Pool {
        let endpoints = &self.inner.endpoints;
        let i = *record.endpoint.get_or_insert_with(|| endpoints.pick());
        let slot = endpoints.slot(i);
        record.endpoint_url.clone_from(&slot.label);
        &slot.pool
    }

    /// The pool of endpoint `i`.
    fn pool(&self, i: Option<u16>) -> &http1::Pool {
        &self.inner.endpoints.slot(i.unwrap_or(0)).pool
    }

    /// Starts `record`'s request at once on the calling thread (any thread, no runtime needed) when an idle
    /// plain-TCP connection is waiting: stamps `sent_at` and writes the request without waiting. `None`
    /// when there is no such connection; then [`HttpClient::send`] does it all.
    pub fn try_start_now(&self, record: &mut RequestRecord) -> Option<Started> {
        let pool = self.pool_for(record);
        let mut conn = pool.try_idle()?;
        self.stamp_id(record);
        let extra = record.extra_headers.as_deref().unwrap_or("");
        conn.prepare(pool.endpoint(), extra.as_bytes(), record.request.as_bytes());
        self.inner.hooks.before_send();
        record.sent_at = Instant::now();
        match conn.try_write_now() {
            Some(written) => Some(Started { conn, written }),
            None => {
                pool.checkin(conn);
                None
            }
        }
    }

    /// Gives `record` its request id header (once; see [`super::request_id`]).
    fn stamp_id(&self, record: &mut RequestRecord) {
        if let Some(name) = &self.inner.id_header {
            super::request_id::stamp(record, name);
        }
    }

    /// Sends `record.request` and fills `record` with what came back. Never fails: every problem becomes
    /// a failed record with its kind and text.
    pub async fn send(&self, record: RequestRecord) -> RequestRecord {
        self.send_from(record, None).await
    }

    /// Finishes a request begun with [`HttpClient::try_start_now`] (or sends it from scratch).
    pub async fn send_from(
        &self,
        mut record: RequestRecord,
        started: Option<Started>,
    ) -> RequestRecord {
        let inner = &*self.inner;
        inner.in_flight.fetch_add(1, Ordering::Relaxed);
        let _in_flight = InFlight(&inner.in_flight);
        inner.sent.fetch_add(1, Ordering::Relaxed);
        if inner.debug {
            tracing::debug!(
                index = record.index,
                "request start: {}",
                truncate(&record.request, 100)
            );
        }
        let hint = |i: usize| inner.size_hint[i].load(Ordering::Relaxed).min(MAX_HINT);
        record.chunk_times.reserve(hint(0));
        record.response_spans.reserve(hint(1));
        record.response_bytes.reserve(hint(2));
        let deadline = tokio::time::Instant::now() + inner.total_timeout;
        self.pool_for(&mut record);
        let endpoint = record.endpoint.unwrap_or(0);
        inner.endpoints.begin(endpoint);
        if started.is_none() {
            self.stamp_id(&mut record);
            inner.hooks.before_send();
            record.sent_at = Instant::now();
        }
        let outcome = tokio::time::timeout_at(deadline, self.exchange(&mut record, started)).await;
        let connect_failed = matches!(
            record.failure,
            Some(FailureKind::Connect | FailureKind::Reset)
        ) && record.status_code.is_none();
        inner.endpoints.end(endpoint, connect_failed);
        if record.success {
            let sizes = [
                record.chunk_times.len(),
                record.response_spans.len(),
                record.response_bytes.len(),
            ];
            for (slot, size) in inner.size_hint.iter().zip(sizes) {
                slot.store(size, Ordering::Relaxed);
            }
        }
        if outcome.is_err() {
            let at = Instant::now();
            record.fail(
                FailureKind::Timeout,
                format!(
                    "total timeout of {} s exceeded (--total-timeout)",
                    inner.total_timeout.as_secs_f64()
                ),
                at,
            );
        }
        if !record.success && !record.is_stream && record.status_code != Some(200) {
            // evalscope counts a failure as a stream request when its body asked for one (a 200 head
            // decided it from its Content-Type instead). Read only for failures, off the common path.
            record.is_stream = body_requests_stream(&record.request);
        }
        if inner.debug {
            tracing::debug!(
                index = record.index,
                success = record.success,
                chunks = record.chunk_times.len(),
                "request end"
            );
        }
        record
    }

    /// Writes the request and reads the response head, on a pooled connection; a reused connection that
    /// fails before any response byte (the server closed it while idle — llama.cpp closes after every
    /// streamed response despite `Keep-Alive`) is replaced by a new one, once: nothing was answered, so the
    /// request was not served. The resend is timed from the new attempt (`sent_at`).
    async fn start(
        &self,
        pool: &http1::Pool,
        extra: &[u8],
        body: &[u8],
        sent_at: &mut Instant,
        started: Option<Started>,
    ) -> Result<(Conn, Head), http1::Error> {
        let (mut conn, reused, written) = match started {
            Some(s) => (s.conn, true, Some(s.written)),
            None => {
                let (conn, reused) = pool.checkout().await?;
                (conn, reused, None)
            }
        };
        let first = async {
            match written {
                Some(n) => conn.write_rest(n).await?,
                None => conn.write_request(pool.endpoint(), extra, body).await?,
            }
            conn.read_head(pool.endpoint()).await
        }
        .await;
        match first {
            Ok(head) => Ok((conn, head)),
            Err(e) if reused && !conn.got_bytes() && !matches!(e, http1::Error::ReadTimeout(_)) => {
                drop(conn);
                *sent_at = Instant::now();
                let mut conn = pool.connect().await?;
                conn.write_request(pool.endpoint(), extra, body).await?;
                let head = conn.read_head(pool.endpoint()).await?;
                Ok((conn, head))
            }
            Err(e) => Err(e),
        }
    }

    async fn exchange(&self, record: &mut RequestRecord, started: Option<Started>) {
        let body = record.request.clone();
        let extra = record.extra_headers.clone();
        let extra = extra.as_deref().unwrap_or("").as_bytes();
        let pool = self.pool(record.endpoint);
        let (mut conn, head) = match self
            .start(pool, extra, body.as_bytes(), &mut record.sent_at, started)
            .await
        {
            Ok(ok) => ok,
            Err(e) => {
                let at = Instant::now();
                let msg = match e {
                    http1::Error::Connect(_) => {
                        format!("{e} ({})", pool.endpoint().route())
                    }
                    _ => e.to_string(),
                };
                record.fail(classify(&e), msg, at);
                return;
            }
        };
        record.status_code = Some(head.status);
        let result = if head.status != 200 {
            self.read_refusal(&mut conn, &head, record).await
        } else if head.content_type.contains("text/event-stream") {
            self.read_stream(&mut conn, &head, record).await
        } else {
            self.read_whole(&mut conn, &head, record).await
        };
        record.read_lag = conn.read_lag();
        if let Ok(true) = result {
            pool.checkin(conn);
        }
    }

    /// A response other than 200: the request fails with its status, reason, `Retry-After` and the start
    /// of its body. Returns whether the connection can be reused.
    async fn read_refusal(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        let mut text = Vec::new();
        let read = read_bounded(conn, self.pool(record.endpoint).endpoint(), head, &mut text).await;
        let at = Instant::now();
        let shown = clip(&text);
        let retry_after = head
            .retry_after
            .as_deref()
            .map(|v| format!(" (Retry-After: {})", one_line(v)))
            .unwrap_or_default();
        let (status, reason) = (head.status, one_line(&head.reason));
        let msg = match (&read, shown.is_empty()) {
            (Err(e), _) => {
                format!("HTTP {status} {reason}{retry_after}: (body unreadable: {e})")
            }
            (Ok(_), true) => format!("HTTP {status} {reason}{retry_after}"),
            (Ok(_), false) => format!("HTTP {status} {reason}{retry_after}: {shown}"),
        };
        record.fail(FailureKind::HttpStatus, msg, at);
        read
    }

    /// A `text/event-stream` response: each read's events applied as they arrive, stamped with the read's
    /// arrival time; a stream that ends without its end marker and without usage fails.
    async fn read_stream(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        record.is_stream = true;
        record.completed_at = record.sent_at;
        let mut framer = SseFramer::new();
        let mut scan = crate::api::StreamScan::default();
        let mut saw_done = false;
        let debug = self.inner.debug;
        let api = self.inner.api;
        let index = record.index;
        let read = conn
            .read_body(self.pool(record.endpoint).endpoint(), head, |data, at| {
                if debug {
                    tracing::debug!(
                        index,
                        "chunk: {}",
                        truncate(&String::from_utf8_lossy(data), 200)
                    );
                }
                framer.push(data, |event| {
                    saw_done |= event == b"[DONE]";
                    crate::api::apply_stream_event(api, record, event, at, &mut scan)
                });
            })
            .await;
        match read {
            Ok(reusable) => {
                let at = Instant::now();
                framer.finish(|event| {
                    saw_done |= event == b"[DONE]";
                    crate::api::apply_stream_event(api, record, event, at, &mut scan)
                });
                if !saw_done
                    && record.failure.is_none()
                    && !has_usage(record)
                    && !cut_short_is_counted(api, self.inner.usage_counted_later)
                {
                    let end = match api {
                        ApiKind::Responses => "a `response.completed` event",
                        _ => "`data: [DONE]`",
                    };
                    record.fail(
                        FailureKind::BadResponse,
                        format!("the stream ended without {end} and carried no token usage"),
                        at,
                    );
                }
                finish(record, self.inner.usage_counted_later);
                Ok(reusable)
            }
            Err(e) => {
                let at = Instant::now();
                record.fail(classify(&e), e.to_string(), at);
                Err(e)
            }
        }
    }

    /// A whole (non-stream) response body, parsed once it is complete.
    async fn read_whole(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        record.is_stream = false;
        let mut bytes = Vec::new();
        let read = read_bounded(
            conn,
            self.pool(record.endpoint).endpoint(),
            head,
            &mut bytes,
        )
        .await;
        let at = Instant::now();
        match &read {
            Ok(_) => {
                record.completed_at = at;
                if crate::api::apply_body(self.inner.api, record, &bytes) {
                    finish(record, self.inner.usage_counted_later);
                } else {
                    record.fail(
                        unusable_body_kind(&head.content_type, &bytes),
                        unusable_body(&head.content_type, &bytes),
                        at,
                    );
                }
            }
            Err(e) => record.fail(classify(e), e.to_string(), at),
        }
        read
    }
}

/// Reads a whole body into `out` (at most [`MAX_BODY_BYTES`]).
async fn read_bounded(
    conn: &mut Conn,
    endpoint: &http1::Endpoint,
    head: &Head,
    out: &mut Vec<u8>,
) -> Result<bool, http1::Error> {
    let mut too_big = false;
    let reusable = conn
        .read_body(endpoint, head, |data, _| {
            if out.len() + data.len() <= MAX_BODY_BYTES {
                out.extend_from_slice(data);
            } else {
                too_big = true;
            }
        })
        .await?;
    if too_big {
        return Err(http1::Error::Protocol(http1::ProtocolError::BodyTooLarge(
            MAX_BODY_BYTES,
        )));
    }
    Ok(reusable)
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

/// Whether a stream that ended cleanly without its end event and without usage still counts, its tokens
/// counted later by the tokenizer: a Responses API stream without `response.completed` does, as evalscope's
/// Responses plugin keeps it (success unless `response.failed` / `error` came); a chat or completions
/// stream without `[DONE]` and usage never does (it was cut off, so its output tokens would be short).
fn cut_short_is_counted(api: ApiKind, counted_later: bool) -> bool {
    api == ApiKind::Responses && counted_later
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

/// The kind of a transport error. The total timeout is enforced outside the HTTP client, so a timeout here
/// is a connect timeout (`connect`) or a read timeout. A connection reset or closed before the response head
/// keeps its kind (`reset`, `disconnect`; evalscope fails it the same way) and has no status: after
/// [`HttpClient::start`]'s retry it was a connection opened for this request, which the server accepted
/// and dropped unanswered, so the load verdict counts it as refused (docs/load-verdict.md).
fn classify(e: &http1::Error) -> FailureKind {
    match e {
        http1::Error::Connect(_) => FailureKind::Connect,
        http1::Error::ReadTimeout(_) => FailureKind::ReadTimeout,
        http1::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => {
            FailureKind::Reset
        }
        http1::Error::Io(_) | http1::Error::Closed => FailureKind::Disconnect,
        http1::Error::Protocol(_) => FailureKind::BadResponse,
    }
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
        // evalscope's `is_stream_body`: absent, or truthy but not the boolean true, is not a stream.
        for body in [
            r#"{}"#,
            r#"{"stream": "true"}"#,
            r#"{"stream": "True"}"#,
            r#"{"stream": 1}"#,
        ] {
            assert!(!body_requests_stream(body), "{body}");
        }
    }

    #[test]
    fn truncate_keeps_head_and_tail() {
        assert_eq!(truncate("abcdef", 1), "a…f");
        assert_eq!(truncate("ab", 1), "ab");
    }
}
