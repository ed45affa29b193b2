//! A generation request that passed every check (chat, completions, Responses): admission by the
//! capacity model, then a stream ([`SseBody`]) or one whole body after the last token is due, shaped by
//! the request's fault; the non-stream request's server-side metrics and ground truth.

use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use super::fault::{Fault, FaultyBody, ResetFlag};
use super::metrics::Finished;
use super::plan::{write_text_fault, Api, Plan, TOKEN_TEXT};
use super::prefix_cache::Chain;
use super::prompt_count::PromptCount;
use super::reply::{json, json_string, sleep_until, unix_now};
use super::request::GenRequest;
use super::stream::{SimBody, SseBody, ERROR_EVENT};
use super::truth::TruthRecord;
use super::Shared;
use crate::clock;

/// When a request reached the simulator.
pub(super) struct Times {
    pub(super) received: Instant,
    pub(super) received_s: f64,
    pub(super) arrived_s: Option<f64>,
}

/// The capacity model: wait for a batch slot (this wait counts in TTFT) and book the prefill. Returns when
/// the request starts, its TTFT from then, and its pacing; without the model: `received`, the plain TTFT.
async fn admit(
    shared: &Arc<Shared>,
    received: std::time::Instant,
    prompt_tokens: u64,
) -> (
    std::time::Instant,
    std::time::Duration,
    Option<super::capacity::Pace>,
) {
    if !shared.capacity.limited() {
        return (received, shared.cfg.ttft, None);
    }
    let admission = shared.capacity.admit(prompt_tokens).await;
    let at = admission.admitted;
    let ttft = shared.cfg.ttft + admission.prefill;
    let pace = super::capacity::Pace {
        capacity: shared.capacity.clone(),
        admission: Arc::new(admission),
    };
    (at, ttft, Some(pace))
}

/// Answers a generation request that passed every check: a stream, or one whole body after the last
/// token is due; `fault` shapes either.
#[allow(clippy::too_many_arguments)]
pub(super) async fn generate(
    shared: &Arc<Shared>,
    api: Api,
    id: u64,
    model: &str,
    request: &GenRequest,
    prompt: PromptCount,
    fault: Option<Fault>,
    reset: ResetFlag,
    times: Times,
    body: &[u8],
) -> Response<SimBody> {
    let prompt_tokens = prompt.tokens;
    let Times {
        received,
        received_s,
        arrived_s,
    } = times;
    let cfg = &shared.cfg;

    let structured = match api {
        Api::Chat => super::structured::plan(request, id, cfg.invalid_output_rate),
        Api::Completion | Api::Responses => None,
    };
    let (tokens, finish_reason) = match &structured {
        Some(s) if s.tokens() > request.max_output() => (request.max_output(), "length"),
        Some(s) => (s.tokens(), s.finish_reason()),
        None => request.output_plan(cfg.output_tokens),
    };
    let cached_tokens = match cfg.prefix_cache.then(|| Chain::of_body(body)).flatten() {
        Some((chain, chat)) => prompt.cached_tokens(shared.prefix.serve(
            &chain,
            chat,
            tokens,
            TOKEN_TEXT.trim_end(),
        )),
        None => 0,
    };
    shared.metrics.cache_hits(cached_tokens);
    let reasoning_tokens = match api {
        Api::Chat if structured.is_some() => 0,
        Api::Chat => cfg.reasoning_tokens.min(tokens),
        Api::Completion | Api::Responses => 0,
    };
    shared.metrics.started();
    let (start, ttft, pace) = admit(shared, received, prompt_tokens).await;
    let mut jitter = cfg.jitter.for_request(id);
    let ttft = match jitter.as_mut() {
        Some(j) => j.scale(ttft),
        None => ttft,
    };
    let plan = Plan {
        api,
        id,
        created: unix_now(),
        model_json: json_string(model),
        tokens,
        tokens_per_chunk: cfg.tokens_per_chunk.max(1),
        finish_reason,
        include_usage: request.include_usage(),
        prompt_tokens,
        cached_tokens,
        received: start,
        arrived: received,
        ttft,
        itl: cfg.itl,
        fault,
        pace,
        reasoning_tokens,
        jitter,
        structured,
    };
    if request.is_stream() {
        let truth = cfg
            .record_truth
            .then(|| (shared.truth.clone(), received_s, arrived_s));
        let body = SimBody::Sse(Box::new(SseBody::new(plan, truth, shared.metrics.clone())));
        let mut resp = Response::new(with_transport_fault(body, fault, reset));
        let h = resp.headers_mut();
        h.insert(CONTENT_TYPE, content_type(fault, "text/event-stream"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return resp;
    }
    whole_answer(shared, plan, reset, times).await
}

/// The whole (non-stream) response body, cut or replaced as `fault` says: the plan's reasoning text, then
/// `answer_tokens` tokens of answer.
fn whole_body(plan: &Plan, answer_tokens: u32, fault: Option<Fault>) -> BytesMut {
    let api = plan.api;
    let mut body = match (api, plan.structured.as_deref()) {
        (Api::Chat, Some(s)) => structured_body(plan, s),
        _ => {
            let mut text = BytesMut::from(TOKEN_TEXT.repeat(answer_tokens as usize).as_bytes());
            write_text_fault(&mut text, fault);
            if api == Api::Responses {
                super::responses::full_body(plan, &text)
            } else {
                chat_body(plan, &text)
            }
        }
    };
    match fault {
        Some(Fault::Malformed | Fault::Truncated) => body.truncate(body.len() / 2),
        Some(Fault::ErrorEvent) if api != Api::Responses => {
            body.clear();
            let event = &ERROR_EVENT[b"data: ".len()..ERROR_EVENT.len() - 2];
            body.extend_from_slice(event);
        }
        _ => {}
    }
    body
}

/// A whole chat body carrying the plan's tool call or JSON output (its first `plan.tokens` tokens).
fn structured_body(plan: &Plan, s: &super::structured::Structured) -> BytesMut {
    let mut out = String::with_capacity(256 + s.text.len());
    out.push('{');
    plan.write_head_fields(&mut out, false);
    out.push_str(r#","choices":[{"index":0,"message":"#);
    s.write_message(&mut out, plan.tokens);
    out.push_str(r#","logprobs":null,"finish_reason":""#);
    out.push_str(plan.finish_reason);
    out.push_str(r#""}],"#);
    plan.write_usage(&mut out);
    out.push('}');
    BytesMut::from(out.as_bytes())
}

/// A whole chat or completions body whose answer text is `text` (after the plan's reasoning tokens).
fn chat_body(plan: &Plan, text: &[u8]) -> BytesMut {
    let (api, finish_reason) = (plan.api, plan.finish_reason);
    let mut out = String::with_capacity(256);
    out.push('{');
    plan.write_head_fields(&mut out, false);
    out.push_str(r#","choices":[{"index":0,"#);
    match api {
        Api::Chat if plan.reasoning_tokens > 0 => {
            out.push_str(r#""message":{"role":"assistant","reasoning_content":""#);
            out.push_str(&TOKEN_TEXT.repeat(plan.reasoning_tokens as usize));
            out.push_str(r#"","content":""#);
        }
        Api::Chat => out.push_str(r#""message":{"role":"assistant","content":""#),
        Api::Completion | Api::Responses => out.push_str(r#""text":""#),
    }
    let mut tail = String::with_capacity(256);
    tail.push_str(if api == Api::Chat { r#""},"# } else { r#"","# });
    tail.push_str(r#""logprobs":null,"finish_reason":""#);
    tail.push_str(finish_reason);
    tail.push_str(r#""}],"#);
    plan.write_usage(&mut tail);
    tail.push('}');
    let mut body = BytesMut::with_capacity(out.len() + text.len() + tail.len());
    body.extend_from_slice(out.as_bytes());
    body.extend_from_slice(text);
    body.extend_from_slice(tail.as_bytes());
    body
}

/// The body, wrapped when `fault` acts on the bytes in transit.
fn with_transport_fault(body: SimBody, fault: Option<Fault>, reset: ResetFlag) -> SimBody {
    match fault.and_then(Fault::transport) {
        Some(mode) => {
            let whole = matches!(body, SimBody::Full(_));
            SimBody::Faulty(Box::new(FaultyBody::new(body, mode, whole, reset)))
        }
        None => body,
    }
}

/// The `Content-Type` to send: `normal`, or `text/plain` under [`Fault::WrongContentType`].
fn content_type(fault: Option<Fault>, normal: &'static str) -> HeaderValue {
    if fault == Some(Fault::WrongContentType) {
        HeaderValue::from_static("text/plain; charset=utf-8")
    } else {
        HeaderValue::from_static(normal)
    }
}

/// Counts a non-stream generation request in the server-side metrics: when its body is produced, or —
/// when the client left first — on drop, with no tokens.
struct NonStreamCount {
    shared: Arc<Shared>,
    prompt_tokens: u64,
    received: Instant,
    /// `(tokens, produced_s, success)` once the body was produced.
    done: Option<(u32, f64, bool)>,
}

impl NonStreamCount {
    fn finish(mut self, tokens: u32, produced_s: f64, success: bool) {
        self.done = Some((tokens, produced_s, success));
    }
}

impl Drop for NonStreamCount {
    fn drop(&mut self) {
        let received_s = clock::secs(self.received);
        let (tokens, end_s, success) = self.done.unwrap_or((0, clock::now_s(), false));
        self.shared.metrics.finished(Finished {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: u64::from(tokens),
            ttft_s: (tokens > 0).then_some(end_s - received_s),
            e2e_s: end_s - received_s,
            success,
        });
    }
}

/// A non-streamed answer: waits until its last token is due (gap by gap when the gaps vary), then one
/// whole body; counted and recorded even if the client leaves while it waits.
async fn whole_answer(
    shared: &Arc<Shared>,
    plan: Plan,
    reset: ResetFlag,
    times: Times,
) -> Response<SimBody> {
    let Times {
        received,
        received_s,
        arrived_s,
    } = times;
    let (api, tokens, fault) = (plan.api, plan.tokens, plan.fault);
    let (prompt_tokens, reasoning_tokens) = (plan.prompt_tokens, plan.reasoning_tokens);
    let cfg = &shared.cfg;
    // Counted even if the client leaves while the body is being produced.
    let counter = NonStreamCount {
        shared: shared.clone(),
        prompt_tokens,
        received,
        done: None,
    };
    let mut plan = plan;
    if plan.gap_by_gap() {
        let mut due = plan.received + plan.ttft;
        for _ in 1..tokens {
            sleep_until(due).await;
            due += plan.token_gap();
        }
        sleep_until(due).await;
    } else {
        sleep_until(plan.token_due(tokens.saturating_sub(1))).await;
    }
    let answer_tokens = tokens - reasoning_tokens;
    let body = whole_body(&plan, answer_tokens, fault);
    let sent_s = clock::now_s();
    counter.finish(tokens, sent_s, fault.is_none());
    if cfg.record_truth {
        let at = (tokens > 0).then_some(sent_s);
        shared.truth.push(TruthRecord {
            received_s,
            arrived_s,
            first_token_s: at,
            last_token_s: at,
            prompt_tokens,
            completion_tokens: u64::from(tokens),
            path: api.path().to_string(),
            stream: false,
            request_id: plan.id,
            chunk_times_s: Vec::new(),
            first_answer_s: at.filter(|_| reasoning_tokens > 0 && answer_tokens > 0),
            reasoning_tokens: u64::from(reasoning_tokens),
            structured: plan.structured.as_deref().map(|s| s.truth(tokens, at)),
        });
    }
    let mut resp = json(StatusCode::OK, body.freeze());
    if fault.is_some() {
        let faulty = with_transport_fault(
            std::mem::replace(resp.body_mut(), SimBody::full("")),
            fault,
            reset,
        );
        *resp.body_mut() = faulty;
        resp.headers_mut()
            .insert(CONTENT_TYPE, content_type(fault, "application/json"));
    }
    resp
}
