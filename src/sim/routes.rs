//! Request routing and the non-streaming responses: chat / completions (stream or not), embeddings,
//! `/v1/models`, `/health`, and JSON errors (404 unknown path, 405 wrong method, 400 bad body).
//!
//! Faults ([`super::fault`]) are chosen once the body is parsed: HTTP errors and `hang` answer here; content
//! faults are written into the body; transport faults wrap it.
//!
//! The receive instant is read first thing, when hyper hands over the parsed request head; every delay is
//! then an absolute deadline from it. Non-stream and embedding responses sleep to their deadline and are
//! stamped right before the response is returned to hyper; streams are timed by
//! [`SseBody`](super::stream::SseBody).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use bytes::BytesMut;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};

use super::fault::{self, Fault, FaultyBody, ResetFlag};
use super::metrics::{Finished, MetricsFault, GARBAGE_METRICS, SLOW_METRICS_DELAY};
use super::prefix_cache::Chain;
use super::request::GenRequest;
use super::stream::{write_text_fault, Api, Plan, SimBody, SseBody, ERROR_EVENT, TOKEN_TEXT};
use super::truth::TruthRecord;
use super::Shared;
use crate::clock;

/// The model name used when no request has named one.
pub(crate) const DEFAULT_MODEL: &str = "mock-model";

/// The request header that picks a fault for one request.
pub const FAULT_HEADER: &str = "x-llmperf-fault";

/// Answers one request; `reset` is the connection's reset-on-close flag (for the `reset` fault),
/// `arrived_s` when the last bytes read on the connection reached its socket (kernel stamp, recorded in
/// the ground truth), if known.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    reset: ResetFlag,
    arrived_s: Option<f64>,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, Infallible> {
    let received = Instant::now();
    let received_s = clock::secs(received);
    let arrived_s = arrived_s.filter(|a| *a <= received_s);
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Ok(error(
                StatusCode::BAD_REQUEST,
                &format!("cannot read body: {e}"),
                "invalid_request_error",
            ))
        }
    };
    let path = parts.uri.path();
    if shared.cfg.record_truth {
        shared.capture(path, &body, &parts.headers);
    }
    let api = match route(&shared, path, &parts.method) {
        Route::Generate(api) => Some(api),
        Route::Embeddings => None,
        Route::Rerank => {
            return Ok(match serde_json::from_slice::<GenRequest>(&body) {
                Ok(request) => {
                    let model = shared.note_model(request.model.as_deref());
                    rerank(&shared, &request, &model, received, (received_s, arrived_s)).await
                }
                Err(e) => error(
                    StatusCode::BAD_REQUEST,
                    &format!("invalid JSON body: {e}"),
                    "invalid_request_error",
                ),
            });
        }
        Route::Metrics => return Ok(metrics(&shared).await),
        Route::Answer(response) => return Ok(response),
    };
    let request: GenRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("invalid JSON body: {e}");
            return Ok(error(
                StatusCode::BAD_REQUEST,
                &msg,
                "invalid_request_error",
            ));
        }
    };
    let model = shared.note_model(request.model.as_deref());
    let Some(api) = api else {
        return Ok(embeddings(&shared, &request, &model, received, (received_s, arrived_s)).await);
    };
    let prompt_tokens = match api {
        Api::Chat if request.messages.is_some() => request.chat_prompt_tokens(),
        Api::Completion if request.prompt.is_some() => request.prompt.map_or(0, |c| c.tokens),
        Api::Responses if request.input.is_some() => request.input.map_or(0, |c| c.tokens),
        Api::Chat => return Ok(missing("messages")),
        Api::Completion => return Ok(missing("prompt")),
        Api::Responses => return Ok(missing("input")),
    };
    let cfg = &shared.cfg;
    let id = shared.next_id();
    let header = parts
        .headers
        .get(FAULT_HEADER)
        .and_then(|v| v.to_str().ok());
    let fault = match fault::pick(header, request.llmperf_fault.as_deref(), &cfg.faults, id) {
        Ok(f) => f,
        Err(msg) => {
            return Ok(error(
                StatusCode::BAD_REQUEST,
                &msg,
                "invalid_request_error",
            ))
        }
    };
    if let Some((status, kind, retry_after)) = fault.and_then(Fault::http_error) {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let msg = format!(
            "simulated fault {} (request {id})",
            fault.map_or("", Fault::name)
        );
        let mut resp = error(status, &msg, kind);
        if let Some(s) = retry_after {
            resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
        }
        return Ok(resp);
    }
    if fault == Some(Fault::Hang) {
        // Never answer; the connection task ends when the client leaves or the server stops.
        std::future::pending::<()>().await;
    }
    let times = Times {
        received,
        received_s,
        arrived_s,
    };
    Ok(generate(
        &shared,
        api,
        id,
        &model,
        &request,
        prompt_tokens,
        fault,
        reset,
        times,
        &body,
    )
    .await)
}

/// What a request's path and method ask for.
enum Route {
    /// A chat or text completion.
    Generate(Api),
    /// `/v1/embeddings`.
    Embeddings,
    /// `/v1/rerank`, `/v1/reranks`, `/rerank`.
    Rerank,
    /// `/metrics` (Prometheus text).
    Metrics,
    /// Answered from the path alone (models, health, wrong method, unknown path).
    Answer(Response<SimBody>),
}

fn route(shared: &Shared, path: &str, method: &Method) -> Route {
    match (path, method) {
        ("/v1/chat/completions", &Method::POST) => Route::Generate(Api::Chat),
        ("/v1/completions", &Method::POST) => Route::Generate(Api::Completion),
        ("/v1/responses", &Method::POST) => Route::Generate(Api::Responses),
        ("/v1/embeddings", &Method::POST) => Route::Embeddings,
        ("/v1/rerank" | "/v1/reranks" | "/rerank", &Method::POST) => Route::Rerank,
        ("/v1/models", &Method::GET) => Route::Answer(models(shared)),
        ("/metrics", &Method::GET) => Route::Metrics,
        ("/health", &Method::GET) => Route::Answer(json(StatusCode::OK, r#"{"status":"ok"}"#)),
        (
            "/v1/chat/completions"
            | "/v1/completions"
            | "/v1/responses"
            | "/v1/embeddings"
            | "/v1/rerank"
            | "/v1/reranks"
            | "/rerank"
            | "/v1/models"
            | "/metrics"
            | "/health",
            m,
        ) => {
            let msg = format!("method {m} not allowed on {path}");
            Route::Answer(error(
                StatusCode::METHOD_NOT_ALLOWED,
                &msg,
                "method_not_allowed",
            ))
        }
        _ => {
            let msg = format!("unknown path {path}");
            Route::Answer(error(StatusCode::NOT_FOUND, &msg, "not_found"))
        }
    }
}

/// When a request reached the simulator.
struct Times {
    received: Instant,
    received_s: f64,
    arrived_s: Option<f64>,
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
async fn generate(
    shared: &Arc<Shared>,
    api: Api,
    id: u64,
    model: &str,
    request: &GenRequest,
    prompt_tokens: u64,
    fault: Option<Fault>,
    reset: ResetFlag,
    times: Times,
    body: &[u8],
) -> Response<SimBody> {
    let Times {
        received,
        received_s,
        arrived_s,
    } = times;
    let cfg = &shared.cfg;

    let (tokens, finish_reason) = request.output_plan(cfg.output_tokens);
    let cached_tokens = match cfg.prefix_cache.then(|| Chain::of_body(body)).flatten() {
        Some((chain, chat)) => shared
            .prefix
            .serve(&chain, chat, tokens, TOKEN_TEXT.trim_end()),
        None => 0,
    };
    let reasoning_tokens = match api {
        Api::Chat => cfg.reasoning_tokens.min(tokens),
        Api::Completion | Api::Responses => 0,
    };
    shared.metrics.started();
    let (start, ttft, pace) = admit(shared, received, prompt_tokens).await;
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
    // Counted even if the client leaves while the body is being produced.
    let counter = NonStreamCount {
        shared: shared.clone(),
        prompt_tokens,
        received,
        done: None,
    };
    if plan.paced_by_load() {
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

/// The whole (non-stream) response body, cut or replaced as `fault` says: the plan's reasoning text, then
/// `answer_tokens` tokens of answer.
fn whole_body(plan: &Plan, answer_tokens: u32, fault: Option<Fault>) -> BytesMut {
    let api = plan.api;
    let mut text = BytesMut::from(TOKEN_TEXT.repeat(answer_tokens as usize).as_bytes());
    write_text_fault(&mut text, fault);
    let mut body = if api == Api::Responses {
        super::responses::full_body(plan, &text)
    } else {
        chat_body(plan, &text)
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

/// `/v1/embeddings`: one 8-float vector per input, after `ttft`.
async fn embeddings(
    shared: &Shared,
    request: &GenRequest,
    model: &str,
    received: Instant,
    (received_s, arrived_s): (f64, Option<f64>),
) -> Response<SimBody> {
    let Some(input) = request.input else {
        return missing("input");
    };
    let id = shared.next_id();
    sleep_until(received + shared.cfg.ttft).await;
    let mut out = String::with_capacity(128 + 96 * input.items as usize);
    out.push_str(r#"{"object":"list","data":["#);
    for i in 0..input.items {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            r#"{{"object":"embedding","index":{i},"embedding":["#
        ));
        for k in 0..8u64 {
            let v = ((i * 8 + k) % 17) as f64 / 16.0 - 0.5;
            out.push_str(&format!("{}{v:?}", if k > 0 { "," } else { "" }));
        }
        out.push_str("]}");
    }
    let p = input.tokens;
    out.push_str(&format!(
        r#"],"model":{},"usage":{{"prompt_tokens":{p},"total_tokens":{p}}}}}"#,
        json_string(model)
    ));
    if shared.cfg.record_truth {
        let t = clock::now_s();
        shared.truth.push(TruthRecord {
            received_s,
            arrived_s,
            first_token_s: Some(t),
            last_token_s: Some(t),
            prompt_tokens: p,
            completion_tokens: 0,
            path: "/v1/embeddings".to_string(),
            stream: false,
            request_id: id,
            chunk_times_s: Vec::new(),
            first_answer_s: None,
            reasoning_tokens: 0,
        });
    }
    json(StatusCode::OK, out)
}

/// `/v1/rerank(s)`: one result per document, sorted by a made-up score, after `ttft`; usage reports only
/// `total_tokens` (query words + document words), as vLLM does.
async fn rerank(
    shared: &Shared,
    request: &GenRequest,
    model: &str,
    received: Instant,
    (received_s, arrived_s): (f64, Option<f64>),
) -> Response<SimBody> {
    let (Some(query), Some(docs)) = (request.query, request.documents) else {
        return missing(if request.query.is_none() {
            "query"
        } else {
            "documents"
        });
    };
    let id = shared.next_id();
    sleep_until(received + shared.cfg.ttft).await;
    let mut out = format!(
        r#"{{"id":"rerank-{id}","model":{},"results":["#,
        json_string(model)
    );
    for i in 0..docs.items {
        if i > 0 {
            out.push(',');
        }
        let score = 1.0 / (i + 1) as f64;
        out.push_str(&format!(r#"{{"index":{i},"relevance_score":{score:?}}}"#));
    }
    let total = query.tokens + docs.tokens;
    out.push_str(&format!(r#"],"usage":{{"total_tokens":{total}}}}}"#));
    if shared.cfg.record_truth {
        let t = clock::now_s();
        shared.truth.push(TruthRecord {
            received_s,
            arrived_s,
            first_token_s: Some(t),
            last_token_s: Some(t),
            prompt_tokens: total,
            completion_tokens: 0,
            path: "/v1/rerank".to_string(),
            stream: false,
            request_id: id,
            chunk_times_s: Vec::new(),
            first_answer_s: None,
            reasoning_tokens: 0,
        });
    }
    json(StatusCode::OK, out)
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

/// `GET /metrics`: the Prometheus text, or the configured [`MetricsFault`].
async fn metrics(shared: &Shared) -> Response<SimBody> {
    let fault = shared.cfg.metrics_fault;
    if fault == Some(MetricsFault::Slow) {
        tokio::time::sleep(SLOW_METRICS_DELAY).await;
    }
    let body = match fault {
        Some(MetricsFault::Missing) => {
            return error(StatusCode::NOT_FOUND, "unknown path /metrics", "not_found")
        }
        Some(MetricsFault::Garbage) => GARBAGE_METRICS.to_string(),
        _ => {
            let model = shared
                .last_model()
                .unwrap_or_else(|| DEFAULT_MODEL.to_string());
            shared.metrics.render(&model)
        }
    };
    let mut resp = Response::new(SimBody::full(body));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

/// `/v1/models`: the most recent request's model, or [`DEFAULT_MODEL`].
fn models(shared: &Shared) -> Response<SimBody> {
    let model = shared
        .last_model()
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let body = format!(
        r#"{{"object":"list","data":[{{"id":{},"object":"model","created":0,"owned_by":"llmperf-sim"}}]}}"#,
        json_string(&model)
    );
    json(StatusCode::OK, body)
}

/// Sleeps until `at`, without touching the timer when `at` has passed (zero delays).
async fn sleep_until(at: Instant) {
    if at > Instant::now() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// A JSON response.
fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<SimBody> {
    let mut resp = Response::new(SimBody::full(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An OpenAI-style JSON error: `{"error":{"message":…,"type":…,"code":status}}`.
fn error(status: StatusCode, message: &str, kind: &str) -> Response<SimBody> {
    let body = format!(
        r#"{{"error":{{"message":{},"type":"{kind}","code":{}}}}}"#,
        json_string(message),
        status.as_u16()
    );
    json(status, body)
}

/// 400 for a missing required field.
fn missing(field: &str) -> Response<SimBody> {
    let msg = format!("'{field}' is a required property");
    error(StatusCode::BAD_REQUEST, &msg, "invalid_request_error")
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Unix seconds now, for `created`.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
