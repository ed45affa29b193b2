//! The multi-turn driver (`--multi-turn`, evalscope's `MultiTurnStrategy`): `parallel` workers each claim
//! the next conversation (warmup conversations first, from one ordered stream) and send its turns one after
//! another, each with the whole history so far and the server's real answers appended. One request is one
//! record, sent by the same client as every other request; each record carries its [`TurnTag`].
//!
//! Per turn, in evalscope's order: the turn's recorded tool latency, llmperf's think time (before every
//! turn but the first), the history extended by the turn's messages, a Poisson pause when `--rate` is set,
//! the body built from the history (the turn's own output cap overriding `--max-tokens`, under the API's
//! key: `max_output_tokens` for the Responses API). A failed turn ends its conversation; `--max-turns` caps
//! it. `--duration` stops claiming new conversations once passed (armed by the first measured claim;
//! conversations already claimed run to their end).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::{DispatchOutcome, HttpClient};
use crate::api::openai::BodyComposer;
use crate::api::reply_text::generated_text;
use crate::dataset::multi_turn::{Conversation, Turn};
use crate::dataset::Item;
use crate::plan::ThinkTime;
use crate::record::{RequestRecord, TurnTag};
use crate::shutdown::Shutdown;

/// One multi-turn run.
pub struct ConversationRun {
    /// Warmup conversations first, then the measured ones (cycled when fewer were loaded).
    pub conversations: Vec<Conversation>,
    /// Conversations to run in all (warmup + measured).
    pub total: usize,
    /// The first `warmup` conversations are not measured.
    pub warmup: usize,
    /// Conversations in flight at once.
    pub parallel: usize,
    /// `--rate` in closed loop: a Poisson pause before each turn.
    pub pacing: Option<crate::plan::Rate>,
    /// `--duration`: stop claiming conversations once passed.
    pub duration: Option<Duration>,
    /// `--max-turns`.
    pub max_turns: Option<u64>,
    /// Pause before each later turn.
    pub think_time: Option<ThinkTime>,
    /// `--session-header` name.
    pub session_header: Option<String>,
    /// Seeds pauses and `--max-tokens MIN MAX` draws.
    pub seed: u64,
    /// `--lora-modules`: each conversation's model (drawn from `seed` and its index; every turn keeps it).
    pub models: Option<Arc<crate::plan::ModelMix>>,
}

/// The body of turn `turn_index` of conversation `conv_index`, whose history (this turn's messages
/// included) is `messages` and routing key `rid`: the composer's body with the turn's `max_tokens`, the
/// conversation's `--lora-modules` model and `rid` `<rid>_t<turn number>` unless the body has one.
pub fn turn_body(
    composer: &BodyComposer,
    run: &ConversationRun,
    conv_index: usize,
    (turn, turn_index): (&Turn, usize),
    messages: &[Value],
    rid: Option<&String>,
    rng: &mut impl rand::Rng,
) -> Arc<str> {
    let mut body = composer.compose_value(&Item::Chat(messages.to_vec()), rng);
    if let Some(n) = turn.max_tokens {
        composer.set_max_tokens(&mut body, n);
    }
    if let Some(mix) = &run.models {
        crate::api::openai::set_model(&mut body, mix.pick(run.seed, conv_index as u64));
    }
    if let Some(rid) = rid {
        body.entry("rid")
            .or_insert_with(|| json!(format!("{rid}_t{}", turn_index + 1)));
    }
    Arc::from(crate::pyjson::dumps(&body))
}

struct Shared {
    run: ConversationRun,
    composer: BodyComposer,
    next_conversation: AtomicUsize,
    next_index: AtomicUsize,
    dispatched: AtomicUsize,
    abandoned: AtomicUsize,
    hit_duration: AtomicBool,
    /// A signal stopped a conversation (or the claiming of one) before its end.
    cut_short: AtomicBool,
    deadline: OnceLock<Instant>,
}

impl Shared {
    /// The next conversation to run, `None` when the run is over.
    fn claim(&self) -> Option<usize> {
        let i = self.next_conversation.fetch_add(1, Ordering::Relaxed);
        if i >= self.run.total || self.run.conversations.is_empty() {
            return None;
        }
        if i >= self.run.warmup {
            if let Some(limit) = self.run.duration {
                let deadline = *self.deadline.get_or_init(|| Instant::now() + limit);
                if Instant::now() >= deadline {
                    self.hit_duration.store(true, Ordering::Relaxed);
                    return None;
                }
            }
        }
        Some(i)
    }
}

/// What the driver keeps between the turns of one conversation.
struct History {
    messages: Vec<Value>,
    prev_prompt_tokens: u64,
    prev_completion_tokens: u64,
}

impl History {
    /// evalscope's per-turn `cached_tokens` (see [`TurnTag::cached_tokens`]), and the running totals.
    fn cached_tokens(&mut self, r: &RequestRecord) -> Option<u64> {
        let prompt = r.usage.prompt_tokens.filter(|&p| p > 0);
        let cached = prompt.map(|_| {
            r.usage
                .cached_tokens
                .unwrap_or(if self.prev_prompt_tokens > 0 {
                    self.prev_prompt_tokens + self.prev_completion_tokens
                } else {
                    0
                })
        });
        if let Some(p) = prompt {
            self.prev_prompt_tokens = p;
        }
        if let Some(c) = r.usage.completion_tokens.filter(|&c| c > 0) {
            self.prev_completion_tokens = c;
        }
        cached
    }
}

async fn pause(seconds: f64, shutdown: &Shutdown) -> bool {
    if seconds <= 0.0 {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => true,
        _ = shutdown.stopped() => false,
    }
}

/// Runs conversation `conv_index`; returns false when the run is being stopped.
async fn converse(
    shared: &Shared,
    client: &HttpClient,
    conv_index: usize,
    records: &mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
    rng: &mut rand::rngs::StdRng,
) -> bool {
    let run = &shared.run;
    let conversation = &run.conversations[conv_index % run.conversations.len()];
    let is_warmup = conv_index < run.warmup;
    // --url-strategy: the conversation keeps one endpoint.
    let endpoint = client.pick_endpoint();
    let turns = match run.max_turns {
        Some(m) => conversation.len().min(m as usize),
        None => conversation.len(),
    };
    let session: Option<Arc<str>> = run.session_header.as_ref().map(|name| {
        Arc::from(format!(
            "{name}: llmperf-{:08x}-{conv_index}\r\n",
            run.seed as u32
        ))
    });
    let rid = conversation.first().and_then(|t| t.rid.as_ref());
    let mut history = History {
        messages: Vec::new(),
        prev_prompt_tokens: 0,
        prev_completion_tokens: 0,
    };
    for (turn_index, turn) in conversation.iter().take(turns).enumerate() {
        if shutdown.stopping() {
            return false;
        }
        if let Some(latency) = turn.tool_latency_s {
            if !pause(latency, shutdown).await {
                return false;
            }
        }
        if turn_index > 0 {
            if let Some(think) = run.think_time {
                if !pause(think.draw(rng), shutdown).await {
                    return false;
                }
            }
        }
        history.messages.extend(turn.messages.iter().cloned());
        if let Some(rate) = run.pacing {
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            if !pause(-u.ln() / rate.per_s(), shutdown).await {
                return false;
            }
        }
        let body = turn_body(
            &shared.composer,
            run,
            conv_index,
            (turn, turn_index),
            &history.messages,
            rid,
            rng,
        );
        let index = shared.next_index.fetch_add(1, Ordering::Relaxed);
        let mut record = RequestRecord::new(index, is_warmup, body, Instant::now());
        record.extra_headers = session.clone();
        record.endpoint = Some(endpoint);
        shared.dispatched.fetch_add(1, Ordering::Relaxed);
        let mut record = tokio::select! {
            biased;
            r = client.send(record) => r,
            _ = shutdown.abandoned() => {
                shared.abandoned.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        };
        let cached_tokens = history.cached_tokens(&record);
        let is_last = turn_index + 1 == turns || !record.success;
        record.turn = Some(TurnTag {
            conversation: conv_index as u64,
            turn_index: turn_index as u32,
            is_last,
            cached_tokens,
        });
        let reply = record.success.then(|| generated_text(&record));
        let _ = records.send(record).await;
        match reply {
            Some(text) => history
                .messages
                .push(json!({"role": "assistant", "content": text})),
            None => break,
        }
    }
    true
}

async fn worker(
    shared: Arc<Shared>,
    client: HttpClient,
    records: mpsc::Sender<RequestRecord>,
    shutdown: Shutdown,
    seed: u64,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    while let Some(conv_index) = shared.claim() {
        if shutdown.stopping()
            || !converse(&shared, &client, conv_index, &records, &shutdown, &mut rng).await
        {
            shared.cut_short.store(true, Ordering::Relaxed);
            return;
        }
    }
}

/// Runs every conversation of `run`, delivering one record per turn to `records`.
pub async fn run(
    client: &HttpClient,
    composer: &BodyComposer,
    run: ConversationRun,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> DispatchOutcome {
    let workers = run.parallel.max(1);
    let seed = run.seed;
    let began = Instant::now();
    let shared = Arc::new(Shared {
        run,
        composer: composer.clone(),
        next_conversation: AtomicUsize::new(0),
        next_index: AtomicUsize::new(0),
        dispatched: AtomicUsize::new(0),
        abandoned: AtomicUsize::new(0),
        hit_duration: AtomicBool::new(false),
        cut_short: AtomicBool::new(false),
        deadline: OnceLock::new(),
    });
    let mut set = JoinSet::new();
    for w in 0..workers {
        set.spawn(worker(
            shared.clone(),
            client.clone(),
            records.clone(),
            shutdown.clone(),
            seed.wrapping_add(w as u64 + 1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ));
    }
    drop(records);
    while let Some(joined) = set.join_next().await {
        if let Err(e) = joined {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
    DispatchOutcome {
        dispatched: shared.dispatched.load(Ordering::Relaxed),
        abandoned: shared.abandoned.load(Ordering::Relaxed),
        hit_duration: shared.hit_duration.load(Ordering::Relaxed),
        interrupted: shared.cut_short.load(Ordering::Relaxed),
        began: Some(began),
        held_at_gate: false,
    }
}
