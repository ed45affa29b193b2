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
    let aggregator = start_aggregator(ctx, this, store, rx, progress_total, tracker.take());
    let scrape =
        crate::server_metrics::start_for_run(plan.server_side.metrics.as_ref(), &ctx.url).await;
    let cpu_start = crate::resources::client_cpu();
    let sched_start = crate::resources::client_threads_sched();
    let window_start = std::time::Instant::now();
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
    };
    let (outcome, produced) = send(ctx, this, client, &dispatch, payload, tx).await;
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
    Ok(Measured {
        acc: done.acc,
        scrape,
        observers: done.observers,
        outcome,
        rows,
        cpu_use,
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

/// Starts the run's aggregator on the records `rx` receives, owning the store and lent the tracker.
fn start_aggregator(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    store: Store,
    rx: mpsc::Receiver<RequestRecord>,
    progress_total: u64,
    mut tracker: Option<ProgressTracker>,
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
    let progress = crate::progress::Progress::new(format!("Processing[{name}]"), progress_total);
    if let Some(t) = &mut tracker {
        t.run_started(&name);
    }
    let observers = Observers {
        tracker,
        visualizer: ctx.visualizer.clone(),
        timeline: crate::metrics::WorkloadTimeline::spilling_in(run_dir),
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
