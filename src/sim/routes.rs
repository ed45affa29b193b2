//! Request routing: chat / completions / Responses (answered by [`super::generate`]), embeddings,
//! rerank, `/metrics`, `/v1/models`, `/health`, and JSON errors (404 unknown path, 405 wrong method, 400
//! bad body). A `/v1/…` endpoint behind a gateway prefix (`/compatible-mode/v1/chat/completions`) is
//! served as the plain one.
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
use std::time::Instant;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};

use super::fault::{self, Fault, ResetFlag};
use super::generate::{generate, Times};
use super::metrics::{MetricsFault, GARBAGE_METRICS, SLOW_METRICS_DELAY};
use super::plan::Api;
use super::prompt_count::PromptCount;
use super::reply::{error, json, json_string, missing, sleep_until};
use super::request::GenRequest;
use super::stream::SimBody;
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
        Route::Control => return Ok(super::control::handle(&shared, path)),
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
    if let Some(log) = &shared.request_log {
        log.log(path, request.model.as_deref(), &parts.headers);
    }
    let model = shared.note_model(request.model.as_deref());
    let Some(api) = api else {
        return Ok(embeddings(&shared, &request, &model, received, (received_s, arrived_s)).await);
    };
    let prompt_tokens = match prompt_count(&shared.cfg, api, &request, &body) {
        Ok(count) => count,
        Err(response) => return Ok(*response),
    };
    let id = shared.next_id();
    let fault = match fault_of(&shared.cfg, &parts.headers, &request, id) {
        Ok(f) => f,
        Err(response) => return Ok(*response),
    };
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

/// The request's prompt length: the simulator's own word count, or `--mock-tokenizer`'s count of the body
/// (chat and completions); the 400 answer when the API's prompt field is missing.
fn prompt_count(
    cfg: &super::SimConfig,
    api: Api,
    request: &GenRequest,
    body: &[u8],
) -> Result<PromptCount, Box<Response<SimBody>>> {
    let words = match api {
        Api::Chat if request.messages.is_some() => request.chat_prompt_tokens(),
        Api::Completion if request.prompt.is_some() => {
            request.prompt.as_ref().map_or(0, |c| c.tokens)
        }
        Api::Responses if request.input.is_some() => request.input.as_ref().map_or(0, |c| c.tokens),
        Api::Chat => return Err(Box::new(missing("messages"))),
        Api::Completion => return Err(Box::new(missing("prompt"))),
        Api::Responses => return Err(Box::new(missing("input"))),
    };
    Ok(match (&cfg.prompt_counter, api) {
        (Some(counter), Api::Chat | Api::Completion) => PromptCount {
            tokens: counter.count(body).unwrap_or(words),
            words,
        },
        _ => PromptCount::words(words),
    })
}

/// The fault request `id` gets (the header, the body's field, or `--mock-fault-*` rates); the answer itself
/// when the fault is an HTTP error, or a 400 for an unknown fault name.
fn fault_of(
    cfg: &super::SimConfig,
    headers: &hyper::HeaderMap,
    request: &GenRequest,
    id: u64,
) -> Result<Option<Fault>, Box<Response<SimBody>>> {
    let header = headers.get(FAULT_HEADER).and_then(|v| v.to_str().ok());
    let fault =
        fault::pick(header, request.llmperf_fault.as_deref(), &cfg.faults, id).map_err(|msg| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                &msg,
                "invalid_request_error",
            ))
        })?;
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
        return Err(Box::new(resp));
    }
    Ok(fault)
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
    /// A prefix-cache reset or a profiler call (see [`super::control`]).
    Control,
    /// Answered from the path alone (models, health, wrong method, unknown path).
    Answer(Response<SimBody>),
}

/// The path a route is matched on: from the last `/v1/` on, so that an endpoint behind a gateway prefix
/// (DashScope's `/compatible-mode/v1/chat/completions`, `/compatible-api/v1/reranks`, a proxy's
/// `/openai/v1/...`) is served as the plain one; other paths as they are.
fn route_path(path: &str) -> &str {
    match path.rfind("/v1/") {
        Some(i) if i > 0 => &path[i..],
        _ => path,
    }
}

fn route(shared: &Shared, path: &str, method: &Method) -> Route {
    let path = route_path(path);
    match (path, method) {
        ("/v1/chat/completions", &Method::POST) => Route::Generate(Api::Chat),
        ("/v1/completions", &Method::POST) => Route::Generate(Api::Completion),
        ("/v1/responses", &Method::POST) => Route::Generate(Api::Responses),
        ("/v1/embeddings", &Method::POST) => Route::Embeddings,
        ("/v1/rerank" | "/v1/reranks" | "/rerank", &Method::POST) => Route::Rerank,
        ("/v1/models", &Method::GET) => Route::Answer(models(shared)),
        ("/metrics", &Method::GET) => Route::Metrics,
        (p, &Method::POST) if super::control::PATHS.contains(&p) => Route::Control,
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
            | "/health"
            | "/reset_prefix_cache"
            | "/flush_cache"
            | "/start_profile"
            | "/stop_profile",
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
    sleep_until(received + shared.cfg.jitter.scale_ttft(id, shared.cfg.ttft)).await;
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
            structured: None,
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
    sleep_until(received + shared.cfg.jitter.scale_ttft(id, shared.cfg.ttft)).await;
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
            structured: None,
        });
    }
    json(StatusCode::OK, out)
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
