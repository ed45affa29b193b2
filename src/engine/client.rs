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
use crate::plan::{ApiKind, RunPlan};
use crate::record::{FailureKind, PhaseMarks, RequestRecord};
pub use read::error_chain;
use read::{body_requests_stream, classify, truncate};

mod read;

/// A request already on the wire: its (reused) connection, how many bytes went out and, when that was
/// all of it, when (the task that finishes it may run later).
pub struct Started {
    conn: Conn,
    written: usize,
    written_at: Option<Instant>,
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
            Some(written) => {
                let written_at = conn.all_written(written).then(Instant::now);
                Some(Started {
                    conn,
                    written,
                    written_at,
                })
            }
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
    /// request was not served. The resend is timed from the new attempt (`sent_at`), and its phases are
    /// the new connection's (`marks`: a new connection's steps, the write, the head's arrival).
    async fn start(
        &self,
        pool: &http1::Pool,
        (extra, body): (&[u8], &[u8]),
        sent_at: &mut Instant,
        marks: &mut PhaseMarks,
        started: Option<Started>,
    ) -> Result<(Conn, Head), http1::Error> {
        let (mut conn, reused, written) = match started {
            Some(s) => (s.conn, true, Some((s.written, s.written_at))),
            None => {
                let (mut conn, reused) = pool.checkout().await?;
                marks.conn = conn.take_opened();
                (conn, reused, None)
            }
        };
        let first = async {
            match written {
                Some((_, Some(at))) => marks.written = Some(at),
                Some((n, None)) => conn.write_rest(n).await?,
                None => conn.write_request(pool.endpoint(), extra, body).await?,
            }
            marks.written = marks.written.or_else(|| Some(Instant::now()));
            conn.read_head(pool.endpoint()).await
        }
        .await;
        match first {
            Ok(head) => {
                marks.head = Some(conn.last_arrival());
                Ok((conn, head))
            }
            Err(e) if reused && !conn.got_bytes() && !matches!(e, http1::Error::ReadTimeout(_)) => {
                drop(conn);
                marks.clear();
                *sent_at = Instant::now();
                let mut conn = pool.connect().await?;
                marks.conn = conn.take_opened();
                conn.write_request(pool.endpoint(), extra, body).await?;
                marks.written = Some(Instant::now());
                let head = conn.read_head(pool.endpoint()).await?;
                marks.head = Some(conn.last_arrival());
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
            .start(
                pool,
                (extra, body.as_bytes()),
                &mut record.sent_at,
                &mut record.phase_marks,
                started,
            )
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
        record.phase_marks.first_byte = conn.body_arrival();
        if let Ok(true) = result {
            pool.checkin(conn);
        }
    }
}
