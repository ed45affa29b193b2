//! The built-in OpenAI-compatible simulator: a small HTTP/1.1 server on `127.0.0.1` that answers like vLLM
//! with configurable timing, and records what it really did (the ground truth for measuring the client's own
//! error). Used by `--api mock`, the integration tests and the benchmarks.
//!
//! # Server
//! [`SimServer::start`] binds `127.0.0.1:0` (listen backlog 4096) and runs on its own OS thread with its own
//! tokio runtime ([`SimConfig::threads`] workers; one thread means a current-thread runtime), so it never
//! shares — or competes inside — the client's runtime. hyper 1 serves HTTP/1.1 with keep-alive; every
//! accepted socket gets `TCP_NODELAY` (otherwise a small SSE frame can wait for a delayed ACK).
//! [`SimServer::shutdown`] (or dropping the handle) stops accepting, drops every connection and joins the
//! thread. [`SimServer::kill`] does the same but keeps the handle, and [`SimServer::revive`] listens again
//! on the same port with the same state (a server killed and restarted: connection refused meanwhile).
//!
//! # Faults
//! [`SimConfig::faults`], the `x-llmperf-fault` header or an `llmperf_fault` body field make a request
//! misbehave: HTTP errors, resets, truncated or malformed streams, hangs, slow drips, huge lines, invalid
//! UTF-8, wrong content types. See [`fault`]. [`SimConfig::max_connections`] refuses connections beyond a
//! limit: the server accepts them and closes them at once with a reset, before reading or writing a byte.
//!
//! # Routes
//! * `POST /v1/chat/completions`, `POST /v1/completions` — stream (SSE) or not; see below.
//! * `POST /v1/responses` — the OpenAI Responses API, stream or not (events in `responses.rs`).
//! * `POST /v1/embeddings` — `{"object":"list","data":[{"object":"embedding","index":i,"embedding":[8
//!   floats]}],"model":M,"usage":{"prompt_tokens":P,"total_tokens":P}}` after `ttft`; one vector per input
//!   string (or per token-id list in a list of lists).
//! * `POST /v1/rerank`, `/v1/reranks`, `/rerank` — `{"id":…,"model":M,"results":[{"index":i,
//!   "relevance_score":1/(i+1)}…],"usage":{"total_tokens":Q+D}}` after `ttft`: one result per document,
//!   tokens = words of the query plus words of every document (vLLM reports only `total_tokens`).
//! * `GET /v1/models` — one model: the `model` of the most recent request, else `"mock-model"`.
//! * `GET /health` — `{"status":"ok"}`.
//! * `POST /reset_prefix_cache` (vLLM), `POST /flush_cache` (SGLang) — empty the prefix cache;
//!   `POST /start_profile`, `POST /stop_profile` — a pretend profiler; every call is recorded with its time
//!   ([`SimServer::control_calls`]). See [`control`].
//! * `GET /metrics` — Prometheus text with vLLM's metric names and the simulator's true counters, gauges
//!   and histograms ([`metrics`]); [`SimConfig::metrics_fault`] makes it missing, slow or garbage.
//! * Anything else: 404 `{"error":{"message":…,"type":"not_found","code":404}}`; a known path with the
//!   wrong method: 405; a body that is not valid JSON (or lacks `messages` / `prompt` / `input`): 400 with
//!   type `invalid_request_error`.
//!
//! # Request fields honoured
//! `model` (echoed; `"mock-model"` if absent), `max_tokens` (or `max_completion_tokens`; default 16),
//! `min_tokens`, `ignore_eos`, `stream`, `stream_options.include_usage`, `messages` / `prompt` / `input`.
//! Everything else (`n`, `temperature`, `stop`, …) is accepted and ignored.
//!
//! **Output length**: `ignore_eos: true` gives exactly `max_tokens`; otherwise [`SimConfig::output_tokens`]
//! raised to `min_tokens` and capped at `max_tokens`. `finish_reason` is `"length"` when the output reaches
//! `max_tokens`, else `"stop"`. Every token is the word `"hello "`, so a client can count output tokens
//! by words.
//!
//! **Prompt token count** (no tokenizer, no chat-template overhead): the number of whitespace-separated
//! words (`str::split_whitespace`) in every message `content` string and every content part of type
//! `"text"` (other parts count 0), or in the `prompt` string; a `prompt` that is a list of token ids counts
//! its length; a list of strings sums them. Embeddings `input` follows the same rule (sum over a list).
//! With [`SimConfig::prompt_counter`] (a tokenizer: `--api mock` with `--tokenizer-path`, `serve-mock
//! --tokenizer-path`), chat and completions prompts are counted as a server with that tokenizer counts
//! them, chat template included (see [`prompt_count`]).
//!
//! **Reasoning**: with [`SimConfig::reasoning_tokens`] = R, the first R output tokens of a chat response go
//! out as `delta.reasoning_content` (`message.reasoning_content` when not streaming), the rest as
//! `content`, and the usage carries `completion_tokens_details.reasoning_tokens` = min(R, output tokens).
//!
//! **Tool calls and JSON output**: a chat request that offers `tools` gets one tool call, one asking for
//! a JSON `response_format` gets JSON content, streamed in fragments (the output length is the
//! fragments' count, still cut by `max_tokens`); [`SimConfig::invalid_output_rate`] makes a seeded share
//! of them invalid. The ground truth keeps what was sent. See `structured.rs`.
//!
//! # Timing
//! Token `i` (0-based) is produced at `received + ttft + i * itl` on an absolute timeline from the instant
//! the request head was parsed, slept to with `sleep_until` (zero delays never touch the timer). A stream
//! chunk of [`SimConfig::tokens_per_chunk`] tokens goes out when its last token is produced; chunks that
//! are already due go out together in one write. A non-stream body goes out when the last token is
//! produced (`ttft + (n-1) * itl`); an embedding body at `ttft`.
//!
//! With [`SimConfig::jitter`] each request's TTFT and each of its token gaps is multiplied by a seeded
//! log-normal factor of mean 1 ([`jitter`]); the tokens are then timed one gap after the other.
//!
//! # Capacity model
//! [`SimConfig::max_batch`], [`SimConfig::prefill_tok_per_s`] and [`SimConfig::decode_tok_per_s`] make
//! the simulator a server with a known limit: requests queue for a batch slot, prompts share one prefill
//! stage, tokens share the decode throughput. See [`capacity`] (with the closed-form knees).
//!
//! # Stream format (`data: <json>\n\n` frames, `Content-Type: text/event-stream`)
//! Chat: a role chunk `{"delta":{"role":"assistant","content":""}}` written together with the first content
//! chunk (as vLLM does), one `delta.content` chunk per `tokens_per_chunk` tokens, `finish_reason` on the
//! last, then — only with `stream_options.include_usage` — a chunk with `"choices":[]` and `usage`
//! (`prompt_tokens`, `completion_tokens`, `total_tokens`, `prompt_tokens_details.cached_tokens`: 0, or with
//! [`SimConfig::prefix_cache`] the words of the longest prefix served before — see [`prefix_cache`]), then
//! `data: [DONE]`. Completions: the same without the role chunk, `choices[0].text` instead of `delta`.
//! The last content chunk, the usage chunk and `[DONE]` share one write.
//!
//! # Ground truth
//! With [`SimConfig::record_truth`] the server keeps one [`TruthRecord`] per generation request (pushed when
//! its response ends, fully or because the client left) and a copy of every request received
//! ([`SimServer::requests`]: path, raw body — lossy UTF-8 — and headers with lowercase names). Token times
//! are [`crate::clock`] readings taken immediately before the frame is handed to hyper, which writes it at
//! once. A non-stream response whose client leaves before it is written leaves no record.
//! [`SimConfig::request_log`] appends each generation or embedding request's port, path, `model` and id
//! header to a JSON-lines file (`--mock-request-log`; see `request_log.rs`).

#[cfg(test)]
mod bench;
mod capacity;
mod conn;
pub mod control;
pub mod error;
pub mod fault;
mod generate;
mod instance;
pub mod jitter;
pub mod join;
pub mod metrics;
mod plan;
pub mod prefix_cache;
mod prompt_count;
mod reply;
mod request;
mod request_log;
mod responses;
mod routes;
mod stream;
mod structured;
#[cfg(test)]
mod tests;
mod truth;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;

pub use control::ControlCall;
pub use error::SimError;
pub use fault::{Fault, FaultRule};
pub use jitter::Jitter;
pub use metrics::MetricsFault;
pub use prompt_count::PromptCounter;
pub use routes::FAULT_HEADER;
pub use truth::{write_truth_jsonl, TruthCall, TruthRecord, TruthStructured};

/// One captured request: path, raw body, headers (lowercase names, in received order).
pub type CapturedRequest = (String, String, Vec<(String, String)>);

/// The request id header llmperf sends by default (and the one the request log records by default).
pub const DEFAULT_REQUEST_ID_HEADER: &str = "X-Request-Id";

/// How the simulator behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Delay from the request being received to the first token being produced.
    pub ttft: Duration,
    /// Delay between consecutive tokens.
    pub itl: Duration,
    /// Natural output length when the request does not force one (clamped to `[min_tokens, max_tokens]`;
    /// `ignore_eos: true` gives exactly `max_tokens`).
    pub output_tokens: u32,
    /// Tokens per SSE chunk (0 is treated as 1).
    pub tokens_per_chunk: u32,
    /// Worker threads of the simulator's own tokio runtime (0 is treated as 1).
    pub threads: usize,
    /// Keep ground-truth records and copies of every request.
    pub record_truth: bool,
    /// Faults applied to every N-th generation request (first matching rule wins; see [`fault`]).
    pub faults: Vec<FaultRule>,
    /// Capacity model: at most this many generation requests served at once, the rest queue in arrival
    /// order (0 = no limit). See [`capacity`].
    pub max_batch: u32,
    /// Capacity model: prefill throughput of the one FIFO prefill stage, prompt tokens/s (0 = none).
    pub prefill_tok_per_s: u64,
    /// Capacity model: decode throughput shared by the requests served, tokens/s (0 = none).
    pub decode_tok_per_s: u64,
    /// Remember served prompts and answers and report repeated prefixes as `cached_tokens` (see
    /// [`prefix_cache`]); off: `cached_tokens` is always 0.
    pub prefix_cache: bool,
    /// How `GET /metrics` misbehaves (`None`: it answers normally; see [`metrics`]).
    pub metrics_fault: Option<MetricsFault>,
    /// Leading output tokens of each chat response sent as `reasoning_content` (and reported as
    /// `usage.completion_tokens_details.reasoning_tokens`); 0 = none.
    pub reasoning_tokens: u32,
    /// Counts chat and completions prompts as a server with a tokenizer does (`None`: words; see
    /// [`prompt_count`]).
    pub prompt_counter: Option<PromptCounter>,
    /// Log-normal noise on each TTFT and each token gap (`--mock-jitter-cv`; off by default). See [`jitter`].
    pub jitter: Jitter,
    /// Share of tool calls and JSON outputs made invalid on purpose, in [0, 1] (see `structured.rs`).
    pub invalid_output_rate: f64,
    /// Append one JSON line per generation or embedding request to this file (see `request_log.rs`).
    pub request_log: Option<std::path::PathBuf>,
    /// The request id header whose value the request log records.
    pub request_id_header: String,
    /// Connections open at once beyond which a new one is refused: accepted, then closed with a reset
    /// (`SO_LINGER` 0) before a byte is read or written, as a server at its connection limit (or a proxy
    /// in front of it) does. 0 = no limit (`--mock-max-connections`).
    pub max_connections: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            output_tokens: 64,
            tokens_per_chunk: 1,
            threads: 1,
            record_truth: true,
            faults: Vec::new(),
            max_batch: 0,
            prefill_tok_per_s: 0,
            decode_tok_per_s: 0,
            prefix_cache: false,
            metrics_fault: None,
            reasoning_tokens: 0,
            prompt_counter: None,
            jitter: Jitter::default(),
            invalid_output_rate: 0.0,
            request_log: None,
            request_id_header: DEFAULT_REQUEST_ID_HEADER.to_string(),
            max_connections: 0,
        }
    }
}

/// State shared by every connection.
#[derive(Debug)]
pub(crate) struct Shared {
    cfg: SimConfig,
    next_id: AtomicU64,
    truth: Arc<truth::TruthLog>,
    requests: Mutex<Vec<CapturedRequest>>,
    model: Mutex<Option<String>>,
    capacity: Arc<capacity::Capacity>,
    prefix: prefix_cache::PrefixCache,
    metrics: Arc<metrics::SimMetrics>,
    control: control::ControlLog,
    request_log: Option<request_log::RequestLog>,
    /// Connections open now (counted for [`SimConfig::max_connections`]).
    open_connections: Arc<AtomicU64>,
}

impl Shared {
    /// The next request number (1, 2, …).
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Stores a copy of a received request.
    fn capture(&self, path: &str, body: &[u8], headers: &HeaderMap) {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_string(), v)
            })
            .collect();
        let body = String::from_utf8_lossy(body).into_owned();
        let captured = (path.to_string(), body, headers);
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(captured);
    }

    /// The model to echo for a request naming `model`; remembers it for `/v1/models`.
    fn note_model(&self, model: Option<&str>) -> String {
        let Some(model) = model else {
            return routes::DEFAULT_MODEL.to_string();
        };
        let mut last = self.model.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() != Some(model) {
            *last = Some(model.to_string());
        }
        model.to_string()
    }

    /// The most recent request's model.
    fn last_model(&self) -> Option<String> {
        self.model.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A running simulator. Dropping it shuts it down.
#[derive(Debug)]
pub struct SimServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A listening server thread: its address, stop switch and handle.
type Launched = (SocketAddr, oneshot::Sender<()>, JoinHandle<()>);

/// Binds `addr` and starts the server thread; returns once it listens.
fn launch(shared: &Arc<Shared>, addr: SocketAddr) -> std::io::Result<Launched> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let addr = socket.local_addr()?;
    let threads = shared.cfg.threads.max(1);
    let (stop_tx, stop_rx) = oneshot::channel();
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let thread_shared = shared.clone();
    let thread = std::thread::Builder::new()
        .name("llmperf-sim".into())
        .spawn(move || run(threads, socket, thread_shared, stop_rx, ready_tx))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok((addr, stop_tx, thread)),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(std::io::Error::other(
                "simulator thread ended before listening",
            ))
        }
    }
}

impl SimServer {
    /// Binds `127.0.0.1:0`, starts the server on its own thread and runtime, and returns once it listens.
    pub fn start(cfg: SimConfig) -> std::io::Result<SimServer> {
        SimServer::start_on(cfg, 0)
    }

    /// [`SimServer::start`] on `127.0.0.1:port` (0: any free port).
    pub fn start_on(cfg: SimConfig, port: u16) -> std::io::Result<SimServer> {
        let capacity = Arc::new(capacity::Capacity::new(
            cfg.max_batch,
            cfg.prefill_tok_per_s,
            cfg.decode_tok_per_s,
        ));
        let request_log = match &cfg.request_log {
            Some(path) => Some(request_log::RequestLog::open(path, &cfg.request_id_header)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            cfg,
            request_log,
            capacity,
            next_id: AtomicU64::new(0),
            truth: Arc::default(),
            requests: Mutex::default(),
            model: Mutex::default(),
            prefix: prefix_cache::PrefixCache::default(),
            metrics: Arc::default(),
            control: control::ControlLog::default(),
            open_connections: Arc::default(),
        });
        let (addr, stop, thread) = launch(&shared, SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
        if let Some(log) = &shared.request_log {
            log.set_port(addr.port());
        }
        Ok(SimServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Kills the server as a crash would: stops listening (new connections are refused) and drops every
    /// open connection mid-response. The state (ground truth, captured requests, request numbers) is kept
    /// for [`SimServer::revive`].
    pub fn kill(&mut self) {
        self.stop_and_join();
    }

    /// Listens again on the same port after [`SimServer::kill`] (a no-op while running).
    pub fn revive(&mut self) -> std::io::Result<()> {
        if self.thread.is_some() {
            return Ok(());
        }
        let (_, stop, thread) = launch(&self.shared, self.addr)?;
        self.stop = Some(stop);
        self.thread = Some(thread);
        Ok(())
    }

    /// Requests received so far (every route that numbers its requests), readable while it runs.
    pub fn requests_received(&self) -> u64 {
        self.shared.next_id.load(Ordering::Relaxed)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The ground truth so far, in received order (a request appears once its response has ended).
    pub fn truth(&self) -> Vec<TruthRecord> {
        self.shared.truth.snapshot()
    }

    /// Every request received so far (empty unless `record_truth`).
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every call to a control endpoint so far (prefix-cache resets, profiler starts and stops), in
    /// order, kept whatever `record_truth` says.
    pub fn control_calls(&self) -> Vec<ControlCall> {
        self.shared.control.snapshot()
    }

    /// Stops accepting, drops every connection and joins the server thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The server thread: builds the runtime, listens, reports readiness, serves until told to stop.
fn run(
    threads: usize,
    socket: TcpSocket,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
    ready: mpsc::SyncSender<std::io::Result<()>>,
) {
    let runtime = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("llmperf-sim-worker")
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let listener = match runtime.block_on(async { socket.listen(4096) }) {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    runtime.block_on(async move {
        let accept = tokio::spawn(accept_loop(listener, shared));
        let _ = stop.await;
        accept.abort();
    });
    // Dropping the runtime cancels every connection task.
    drop(runtime);
}

/// Accepts connections and serves each on its own task.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::debug!("simulator accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let Some(open) = conn::OpenSlot::take(&shared.open_connections, shared.cfg.max_connections)
        else {
            // Over the connection limit: refused with a reset before any byte (zero linger, then close).
            let _ = stream.set_zero_linger();
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let _open = open;
            let reset = fault::ResetFlag::default();
            let conn = conn::FaultConn::new(stream, reset.clone(), shared.cfg.record_truth);
            let arrival = conn.arrival();
            let service = service_fn(move |req| {
                routes::handle(shared.clone(), reset.clone(), arrival.get(), req)
            });
            let result = http1::Builder::new()
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(None)
                .serve_connection(TokioIo::new(conn), service)
                .await;
            if let Err(e) = result {
                tracing::debug!("simulator connection ended: {e}");
            }
        });
    }
}
