//! Sending one run: its database and aggregator, the shard's synchronised start, one send path per
//! workload (prepared requests through the dispatcher, conversations through the conversation driver,
//! agent sessions through the graph driver), and the store finished once every record is in.

use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

use super::aggregate::{aggregate, Completion, Observers};
use super::context::SweepContext;
use super::tracker::ProgressTracker;
use crate::dataset::multi_turn::Conversation;
use crate::engine::feed::Producer;
use crate::engine::{self, Dispatch, HttpClient, RequestFeed};
use crate::metrics::{Accumulator, SummaryContext};
use crate::plan::{AgentxPlan, MultiTurnSettings, RunSpec};
use crate::record::RequestRecord;
use crate::run_folder::RunDir;
use crate::shard::ShardWork;
use crate::store::Store;

/// What a run sends, by workload.
pub(super) enum Payload {
    /// Single requests, prepared ahead of the dispatcher.
    Requests {
        /// The prepared requests.
        feed: RequestFeed,
        /// Their producer.
        producer: Producer,
    },
    /// `--multi-turn`: conversations, warmup first.
    Conversations {
        /// The multi-turn settings.
        settings: MultiTurnSettings,
        /// The conversations.
        conversations: Vec<Conversation>,
    },
    /// `--scenario agentx`: the sessions, built as they are replayed.
    Sessions(Arc<AgentxPlan>),
    /// Nothing: a signal came before the run sent anything (its producer, if any, is told to stop).
    Nothing(Option<Producer>),
}

impl Payload {
    /// The same run sending nothing.
    pub(super) fn nothing(self) -> Payload {
        match self {
            Payload::Requests { producer, .. } => Payload::Nothing(Some(producer)),
            Payload::Nothing(p) => Payload::Nothing(p),
            Payload::Conversations { .. } | Payload::Sessions(_) => Payload::Nothing(None),
        }
    }
}

/// What a run sends: its share of the plan and its payload.
pub(super) struct Sending {
    /// This process's share.
    pub work: ShardWork,
    /// What it sends.
    pub payload: Payload,
}

/// The run being measured, as [`dispatch`] needs it.
pub(super) struct ThisRun<'a> {
    /// The run.
    pub spec: &'a RunSpec,
    /// Its index in the sweep.
    pub index: usize,
    /// Its seed (schedule, max_tokens draws).
    pub seed: u64,
    /// Its folder.
    pub dir: &'a RunDir,
    /// Its arguments (a shard records itself in them).
    pub args: &'a serde_json::Map<String, serde_json::Value>,
}

/// What sending a run's requests produced.
pub(super) struct Measured {
    /// The statistics.
    pub acc: Accumulator,
    /// `--server-metrics`: the scrape of this run, finished with its summary.
    pub scrape: Option<crate::server_metrics::RunScrape>,
    /// The observers, handed back.
    pub observers: Observers,
    /// How dispatching ended.
    pub outcome: engine::DispatchOutcome,
    /// Rows stored.
    pub rows: u64,
    /// The client's CPU use over the run.
    pub cpu_use: crate::metrics::CpuUse,
    /// Server control in this run, and the failure that stops the sweep (see [`super::control`]).
    pub control: (
        crate::server_control::RunControl,
        Option<crate::server_control::ControlError>,
    ),
}

/// Creates the run's database, starts the aggregator, sends this process's share of the requests (all of
/// them unless sharded), and finishes the store.
pub(super) async fn dispatch(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    client: &HttpClient,
    sending: Sending,
    tracker: &mut Option<ProgressTracker>,
) -> Result<Measured> {
    let spec = this.spec;
    let Sending { work, payload } = sending;
    let plan = ctx.plan;
    let db_path = this.dir.database();
    let mut store = Store::create(&db_path, plan.db_commit_interval)?;
    store.commit_on_exit(&ctx.shutdown);
    tracing::info!("Save the data base to: {}", db_path.display());
    // A multi-turn run counts conversations (its requests are built turn by turn, not prepared).
    let progress_total = match payload {
        Payload::Conversations { .. } => spec.number,
        _ => work.measured,
    };
    let (tx, rx) = mpsc::channel(work.parallel.clamp(64, 8192));
    let live = ctx
        .monitors
        .start_point(spec, progress_total, work.parallel, client.sent_counter());
    let point = live.as_ref().map(|l| l.point().clone());
    let aggregator = start_aggregator(ctx, this, store, rx, progress_total, tracker.take(), live);
    let scrape = crate::server_metrics::start_for_run(
        plan.server_side.metrics.as_ref(),
        &plan.traffic.urls(&ctx.url),
    )
    .await;
    if let (Some(point), Some(scrape)) = (&point, &scrape) {
        point.set_server(scrape.latest());
    }
    let cpu_start = crate::resources::client_cpu();
    let sched_start = crate::resources::client_threads_sched();
    let window_start = std::time::Instant::now();
    let armed = super::control::arm(ctx, this.index, client).await;
    // After the connection test and just before sending: a shard records itself and waits for --start-at.
    let shard = crate::shard::begin(
        plan,
        this.index,
        &work,
        spec,
        this.dir,
        this.args,
        &ctx.shutdown,
    )
    .await?;
    let dispatch = Dispatch {
        load: spec.load,
        parallel: work.parallel,
        duration: plan.duration,
        origin: shard.as_ref().and_then(|s| s.origin),
        gate: armed.gate.clone(),
    };
    // A shard whose reset failed sends nothing.
    let payload = if armed.failed_early() {
        payload.nothing()
    } else {
        payload
    };
    let (outcome, produced) = send(ctx, this, client, &dispatch, payload, tx).await;
    drop(dispatch);
    let control = armed.finish().await?;
    let mut done = aggregator.await.context("the aggregator task failed")?;
    *tracker = done.observers.tracker.take();
    let outcome = outcome?;
    if let (Some(shard), Some(began)) = (&shard, outcome.began) {
        crate::shard::finish(shard, began, this.dir, this.args)?;
    }
    done.progress.finish();
    let store = done.store;
    let rows = tokio::task::spawn_blocking(move || store.finish())
        .await
        .context("the store thread failed")??;
    // What was sent is stored; a producer that failed mid-run fails the run.
    produced.context("preparing the run's requests")?;
    if outcome.hit_duration {
        tracing::info!(
            "--duration reached: stopped sending after {} requests",
            outcome.dispatched
        );
    }
    if outcome.abandoned > 0 {
        tracing::warn!(
            "{} request(s) still in flight after the grace period were abandoned (not stored)",
            outcome.abandoned
        );
    }
    let cpu_use = crate::metrics::CpuUse {
        cpu: crate::resources::client_cpu().saturating_sub(cpu_start),
        sched: crate::resources::sched_between(
            &sched_start,
            &crate::resources::client_threads_sched(),
        ),
        wall: window_start.elapsed(),
        cpus: crate::resources::available_cpus(),
    };
    let mut control = control;
    if let Some(f) = plan.server_control.target_hit_rate {
        control.0.hit_rate = Some(super::control::measured_hit_rate(&db_path, f)?);
    }
    Ok(Measured {
        acc: done.acc,
        scrape,
        observers: done.observers,
        outcome,
        rows,
        cpu_use,
        control,
    })
}

/// Sends the run's payload to `tx`, one path per workload; with a feed, waits for its producer too and
/// hands back its result.
async fn send(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    client: &HttpClient,
    dispatch: &Dispatch,
    payload: Payload,
    tx: mpsc::Sender<RequestRecord>,
) -> (Result<engine::DispatchOutcome>, Result<()>) {
    match payload {
        Payload::Requests { feed, producer } => {
            let outcome = engine::run(client, dispatch, feed, tx, &ctx.shutdown).await;
            // The feed is gone: the producer stops at its next hand-over, if it has not ended.
            (outcome, producer.finish().await)
        }
        Payload::Conversations { .. } | Payload::Sessions(_) if !pass_gate(dispatch).await => {
            drop(tx);
            let outcome = engine::DispatchOutcome {
                held_at_gate: true,
                ..engine::DispatchOutcome::default()
            };
            (Ok(outcome), Ok(()))
        }
        Payload::Conversations {
            settings,
            conversations,
        } => {
            let outcome = super::multi_turn::dispatch(
                ctx,
                &settings,
                client,
                this.spec,
                this.seed,
                conversations,
                tx,
            )
            .await;
            (Ok(outcome), Ok(()))
        }
        Payload::Sessions(agentx) => {
            let outcome = super::agentx::dispatch(ctx, &agentx, client, this.spec, tx).await;
            (outcome, Ok(()))
        }
        Payload::Nothing(producer) => {
            drop(tx);
            let produced = match producer {
                Some(p) => p.finish().await,
                None => Ok(()),
            };
            (Ok(engine::DispatchOutcome::default()), produced)
        }
    }
}

/// Conversations and sessions have no warmup phase of their own to wait for (the plan refuses a reset
/// with warmup conversations): they pass the gate before their first request.
async fn pass_gate(dispatch: &Dispatch) -> bool {
    match &dispatch.gate {
        Some(gate) => gate.pass().await,
        None => true,
    }
}

/// Starts the run's aggregator on the records `rx` receives, owning the store and lent the tracker.
fn start_aggregator(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    store: Store,
    rx: mpsc::Receiver<RequestRecord>,
    progress_total: u64,
    mut tracker: Option<ProgressTracker>,
    live: Option<crate::live::PointFeed>,
) -> tokio::task::JoinHandle<super::aggregate::Aggregated> {
    let (plan, spec, run_dir) = (ctx.plan, this.spec, this.dir.path());
    let mut acc = Accumulator::spilling_in(
        SummaryContext {
            concurrency_as_written: spec.load.parallel_as_written(),
            rate_as_written: spec.load.rate_as_written(),
            input_only: plan.api.input_only(),
            pd_metrics: plan.pd_metrics,
        },
        run_dir,
    );
    acc.set_goodput(plan.goodput.clone());
    let name = crate::run_folder::run_name(spec);
    let label = format!("Processing[{name}]");
    let progress = match plan.monitor.ui {
        // The dashboard owns the terminal: the progress goes to the log only.
        crate::plan::monitor::UiKind::Dashboard => {
            crate::progress::Progress::logged(label, progress_total)
        }
        crate::plan::monitor::UiKind::Simple => {
            crate::progress::Progress::new(label, progress_total)
        }
    };
    if let Some(t) = &mut tracker {
        t.run_started(&name);
    }
    let observers = Observers {
        tracker,
        visualizer: ctx.visualizer.clone(),
        timeline: crate::metrics::WorkloadTimeline::spilling_in(run_dir),
        live,
        ..Observers::default()
    };
    tokio::spawn(aggregate(
        rx,
        acc,
        progress,
        store,
        plan.log_every_n,
        observers,
        Completion {
            counter: super::aggregate::usage_fallback(plan, &ctx.prompts),
            tools: crate::tool_calls::Analyzer::for_run(
                plan,
                &ctx.prompts,
                ctx.prompts.tokenizer.clone(),
            ),
        },
    ))
}
