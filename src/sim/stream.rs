//! The response body type and SSE generation.
//!
//! [`SimBody`] is either a complete buffer or an [`SseBody`]: a body that *is* the generator. hyper polls it
//! for the next frame; it sleeps (`sleep_until`) to the next chunk's absolute deadline on the timeline
//! `received + ttft + i * itl` (token `i` is produced then; a chunk goes out when its last token is produced),
//! and on wake-up writes every chunk that is due into one frame — so zero delays cost no timer at all and a
//! late wake-up (or a slow client) catches up instead of drifting. The clock is read immediately before a
//! frame is returned to hyper, which writes and flushes it at once. No task, channel or lock per chunk: the
//! JSON is formatted with `write!` into a reused [`BytesMut`] behind a per-request prefix rendered once.
//!
//! When the client goes away hyper drops the body; the [`Drop`] impl records the ground truth of whatever was
//! sent, so generation stops at the next write attempt and the truth log stays honest.
//!
//! Content faults ([`Fault`]: no `[DONE]`, truncated, malformed, in-band error, a 10 MiB line, invalid UTF-8)
//! are written here, into the first content chunk or the end of the stream; transport faults (reset, stall,
//! slow drip) wrap the body in a [`FaultyBody`].

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

use super::fault::{Fault, FaultyBody, NextBytes};
use super::metrics::{Finished, SimMetrics};
use super::plan::{write_text_fault, Api, Plan, TOKEN_TEXT};
use super::truth::{TruthLog, TruthRecord};
use crate::clock;

/// A response body: a complete buffer, or a timed SSE stream, possibly wrapped by a transport fault.
#[derive(Debug)]
pub(crate) enum SimBody {
    /// The whole body at once (taken on the first poll).
    Full(Option<Bytes>),
    /// A generator of SSE frames.
    Sse(Box<SseBody>),
    /// Another body under a transport fault (reset, stall, slow drip).
    Faulty(Box<FaultyBody<SimBody>>),
}

impl NextBytes for SimBody {
    fn poll_bytes(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        match self {
            SimBody::Full(bytes) => Poll::Ready(bytes.take()),
            SimBody::Sse(sse) => sse.poll_next(cx),
            // Never nested: a fault wraps a plain body.
            SimBody::Faulty(_) => Poll::Ready(None),
        }
    }
}

impl SimBody {
    /// A complete body.
    pub(crate) fn full(bytes: impl Into<Bytes>) -> SimBody {
        SimBody::Full(Some(bytes.into()))
    }
}

impl Body for SimBody {
    type Data = Bytes;
    /// Only a transport fault errs; hyper then closes (or, for a reset, aborts) the connection.
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            SimBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Sse(sse) => sse.poll_next(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            SimBody::Faulty(f) => f.poll_next(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            SimBody::Full(bytes) => bytes.is_none(),
            SimBody::Sse(sse) => sse.ended || sse.next_chunk >= sse.chunks,
            SimBody::Faulty(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            // A whole body cut short by a fault still announces its full length, as a real server would.
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Sse(_) => SizeHint::default(),
            SimBody::Faulty(f) => f.inner().size_hint(),
        }
    }
}

/// An SSE response that generates its frames on the plan's timeline as hyper polls it.
#[derive(Debug)]
pub(crate) struct SseBody {
    plan: Plan,
    /// `data: {"id":…,"model":…,"choices":[` rendered once.
    prefix: Vec<u8>,
    chunks: u32,
    next_chunk: u32,
    sent_tokens: u32,
    first_token_s: Option<f64>,
    last_token_s: Option<f64>,
    /// Per output-bearing chunk, when its frame was handed over (kept only when recording truth).
    chunk_times_s: Vec<f64>,
    buf: BytesMut,
    sleep: Option<Pin<Box<Sleep>>>,
    /// The chunk the armed `sleep` waits for.
    armed_for: Option<u32>,
    truth: Option<(Arc<TruthLog>, f64, Option<f64>)>,
    /// A content fault ended the stream early.
    ended: bool,
    /// Under a shared decode throughput: the last token whose time is fixed, and that time.
    load_due: Option<(u32, Instant)>,
    /// The server-side counters, and whether this request has been counted in them.
    metrics: Arc<SimMetrics>,
    counted: bool,
    /// When the first frame carrying an answer (non-reasoning) token was handed over.
    first_answer_s: Option<f64>,
}

impl SseBody {
    /// A stream for `plan`; when `truth` is given (log, received_s, arrived_s), its record is pushed on
    /// drop.
    pub(crate) fn new(
        plan: Plan,
        truth: Option<(Arc<TruthLog>, f64, Option<f64>)>,
        metrics: Arc<SimMetrics>,
    ) -> SseBody {
        let per = plan.tokens_per_chunk.max(1);
        let chunks = plan.tokens.div_ceil(per).max(1);
        let mut prefix = String::with_capacity(160);
        prefix.push_str("data: {");
        plan.write_head_fields(&mut prefix, true);
        prefix.push_str(r#","choices":["#);
        SseBody {
            plan,
            prefix: prefix.into_bytes(),
            chunks,
            next_chunk: 0,
            sent_tokens: 0,
            first_token_s: None,
            last_token_s: None,
            chunk_times_s: Vec::new(),
            buf: BytesMut::with_capacity(1024),
            sleep: None,
            armed_for: None,
            truth,
            ended: false,
            load_due: None,
            metrics,
            counted: false,
            first_answer_s: None,
        }
    }

    /// Counts this request in the server-side metrics (once).
    fn count(&mut self, success: bool) {
        if self.counted {
            return;
        }
        self.counted = true;
        let received_s = clock::secs(self.plan.arrived);
        let end_s = self.last_token_s.unwrap_or_else(clock::now_s);
        self.metrics.finished(Finished {
            prompt_tokens: self.plan.prompt_tokens,
            completion_tokens: u64::from(self.sent_tokens),
            ttft_s: self.first_token_s.map(|t| t - received_s),
            e2e_s: end_s - received_s,
            success,
        });
    }

    /// Tokens `[start, end)` of chunk `j`.
    fn chunk_tokens(&self, j: u32) -> (u32, u32) {
        let per = self.plan.tokens_per_chunk.max(1);
        let start = j.saturating_mul(per).min(self.plan.tokens);
        (start, start.saturating_add(per).min(self.plan.tokens))
    }

    /// When chunk `j` goes out: when its last token is produced (chunk 0 of an empty output: at `ttft`).
    fn chunk_due(&mut self, j: u32) -> Instant {
        let (_, end) = self.chunk_tokens(j);
        let last = end.saturating_sub(1);
        if !self.plan.gap_by_gap() {
            return self.plan.token_due(last);
        }
        // Each next gap is fixed when first asked for: right after the previous token went out.
        let (mut k, mut t) = self
            .load_due
            .unwrap_or((0, self.plan.received + self.plan.ttft));
        while k < last {
            t += self.plan.token_gap();
            k += 1;
        }
        self.load_due = Some((k, t));
        t
    }

    /// Appends chunk `j` (and the role chunk before the first, the usage chunk and `[DONE]` after the last).
    fn write_chunk(&mut self, j: u32) {
        let (start, end) = self.chunk_tokens(j);
        let fault = self.plan.fault;
        // A truncated stream or an in-band error ends right after the first content chunk.
        let cut = j == 0 && matches!(fault, Some(Fault::Truncated | Fault::ErrorEvent));
        let last = j + 1 == self.chunks && !cut;
        let api = self.plan.api;
        if api == Api::Responses {
            super::responses::write_chunk(&mut self.buf, &self.plan, j, (start, end), last, cut);
            self.ended |= cut;
            self.sent_tokens = end;
            return;
        }
        let w = &mut self.buf;
        if j == 0 && api == Api::Chat {
            w.extend_from_slice(&self.prefix);
            w.extend_from_slice(
                br#"{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            );
            w.extend_from_slice(b"\n\n");
        }
        w.extend_from_slice(&self.prefix);
        if j == 0 && fault == Some(Fault::Malformed) {
            // Cut off mid-object: not JSON.
            w.extend_from_slice(b"{\"ind\n\n");
            self.sent_tokens = end;
            return;
        }
        if let (Api::Chat, Some(s)) = (api, self.plan.structured.as_deref()) {
            let mut extra = BytesMut::new();
            if j == 0 {
                write_text_fault(&mut extra, fault);
            }
            s.write_delta(w, start, end, &extra);
            w.extend_from_slice(br#","logprobs":null,"finish_reason":"#);
        } else {
            self.write_text(j, (start, end));
        }
        let w = &mut self.buf;
        if last {
            let _ = write!(w, r#""{}"}}]}}"#, self.plan.finish_reason);
        } else {
            w.extend_from_slice(b"null}]}");
        }
        w.extend_from_slice(b"\n\n");
        if cut {
            if fault == Some(Fault::ErrorEvent) {
                w.extend_from_slice(ERROR_EVENT);
                w.extend_from_slice(b"data: [DONE]\n\n");
            }
            self.ended = true;
        }
        if last {
            if self.plan.include_usage {
                w.extend_from_slice(&self.prefix);
                w.extend_from_slice(b"],");
                self.plan.write_usage(w);
                w.extend_from_slice(b"}\n\n");
            }
            if fault != Some(Fault::NoDone) {
                w.extend_from_slice(b"data: [DONE]\n\n");
            }
        }
        self.sent_tokens = end;
    }

    /// Appends chunk `j`'s text choice (tokens `[start, end)`: reasoning, then content or text) up to
    /// its `finish_reason` value.
    fn write_text(&mut self, j: u32, (start, end): (u32, u32)) {
        let (api, fault) = (self.plan.api, self.plan.fault);
        let w = &mut self.buf;
        let reasoning_end = self.plan.reasoning_tokens.clamp(start, end);
        match api {
            Api::Chat if reasoning_end > start => {
                w.extend_from_slice(br#"{"index":0,"delta":{"reasoning_content":""#);
                for _ in start..reasoning_end {
                    w.extend_from_slice(TOKEN_TEXT.as_bytes());
                }
                if end > reasoning_end {
                    w.extend_from_slice(br#"","content":""#);
                }
            }
            Api::Chat => w.extend_from_slice(br#"{"index":0,"delta":{"content":""#),
            Api::Completion | Api::Responses => w.extend_from_slice(br#"{"index":0,"text":""#),
        }
        for _ in reasoning_end.max(start)..end {
            w.extend_from_slice(TOKEN_TEXT.as_bytes());
        }
        if j == 0 {
            write_text_fault(w, fault);
        }
        w.extend_from_slice(match api {
            Api::Chat => br#""},"logprobs":null,"finish_reason":"#,
            Api::Completion | Api::Responses => br#"","logprobs":null,"finish_reason":"#,
        });
    }

    /// The next frame: every chunk that is due, or `Pending` until the next one is.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        loop {
            if self.ended || self.next_chunk >= self.chunks {
                return Poll::Ready(None);
            }
            let now = Instant::now();
            let before = self.sent_tokens;
            let mut wrote = false;
            let mut output_chunks = 0;
            while !self.ended
                && self.next_chunk < self.chunks
                && self.chunk_due(self.next_chunk) <= now
            {
                let (start, end) = self.chunk_tokens(self.next_chunk);
                output_chunks += usize::from(end > start);
                self.write_chunk(self.next_chunk);
                self.next_chunk += 1;
                wrote = true;
            }
            if wrote {
                if self.next_chunk >= self.chunks {
                    if let Some(pace) = &self.plan.pace {
                        pace.admission.finish();
                    }
                }
                let frame = self.buf.split().freeze();
                if self.sent_tokens > before {
                    let t = clock::now_s();
                    self.first_token_s.get_or_insert(t);
                    if let Some(prev) = self.last_token_s {
                        self.metrics.token_gap(t - prev);
                    }
                    if self.sent_tokens > self.plan.reasoning_tokens {
                        self.first_answer_s.get_or_insert(t);
                    }
                    self.last_token_s = Some(t);
                    if self.truth.is_some() {
                        self.chunk_times_s
                            .extend(std::iter::repeat_n(t, output_chunks));
                    }
                }
                if self.next_chunk >= self.chunks {
                    self.count(true);
                } else if self.ended {
                    self.count(false);
                }
                return Poll::Ready(Some(frame));
            }
            let due = tokio::time::Instant::from_std(self.chunk_due(self.next_chunk));
            match &mut self.sleep {
                Some(sleep) if self.armed_for != Some(self.next_chunk) => sleep.as_mut().reset(due),
                Some(_) => {}
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(due))),
            }
            self.armed_for = Some(self.next_chunk);
            if let Some(sleep) = &mut self.sleep {
                ready!(sleep.as_mut().poll(cx));
            }
        }
    }
}

/// The in-band error event of [`Fault::ErrorEvent`] (a whole SSE frame).
pub(crate) const ERROR_EVENT: &[u8] = b"data: {\"error\":{\"message\":\"simulated in-band error\",\"type\":\"server_error\",\"code\":500}}\n\n";

impl Drop for SseBody {
    fn drop(&mut self) {
        self.count(false);
        if let Some((log, received_s, arrived_s)) = self.truth.take() {
            log.push(TruthRecord {
                received_s,
                arrived_s,
                first_token_s: self.first_token_s,
                last_token_s: self.last_token_s,
                prompt_tokens: self.plan.prompt_tokens,
                completion_tokens: u64::from(self.sent_tokens),
                path: self.plan.api.path().to_string(),
                stream: true,
                request_id: self.plan.id,
                chunk_times_s: std::mem::take(&mut self.chunk_times_s),
                first_answer_s: self.first_answer_s,
                reasoning_tokens: u64::from(self.plan.reasoning_tokens.min(self.sent_tokens)),
                structured: self
                    .plan
                    .structured
                    .as_deref()
                    .map(|s| s.truth(self.sent_tokens, self.first_token_s)),
            });
        }
    }
}
