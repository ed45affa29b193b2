//! One run of a sweep: start preparing the bodies (ahead of the dispatcher, see [`super::requests`]),
//! test the connection, dispatch, aggregate, and write the run's files as soon as it ends (so a later
//! failure cannot lose them).

use std::path::{Path, PathBuf};

use std::sync::Arc;

use anyhow::{Context, Result};
use rand::SeedableRng;
use tokio::sync::mpsc;

use super::aggregate::{aggregate, Completion, Observers};
use super::tracker::ProgressTracker;
use crate::api::openai::BodyComposer;
use crate::dataset::Prompts;
use crate::engine::feed::Producer;
use crate::engine::{self, conn_test, Dispatch, HttpClient, RequestFeed};
use crate::export;
use crate::metrics::{
    Accumulator, BenchmarkSummary, PercentileTable, SummaryContext, WorkloadThroughput,
};
use crate::plan::{DatasetKind, LoadMode, RunPlan, RunSpec};
use crate::pyjson;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::visualizer::VisualizerFeed;

/// What a sweep shares between its runs.
pub struct SweepContext<'a> {
    /// The plan.
    pub plan: &'a RunPlan,
    /// The endpoint actually used (the simulator's for `--api mock`).
    pub url: reqwest::Url,
    /// The inputs of every run (shared with each run's request producer).
    pub prompts: Arc<Prompts>,
    /// Body builder.
    pub composer: BodyComposer,
    /// Stop state.
    pub shutdown: Shutdown,
    /// `--visualizer`: the queue to the tracker bridge.
    pub visualizer: Option<VisualizerFeed>,
    /// Measured and successful requests over every run (the exit code).
    pub tally: &'a super::outcome::Tally,
}

/// The outcome of one run.
pub struct RunResult {
    /// The run.
    pub spec: RunSpec,
    /// Its summary.
    pub summary: BenchmarkSummary,
    /// Its percentiles.
    pub percentiles: PercentileTable,
    /// The run was cut short by a signal.
    pub interrupted: bool,
    /// Its workload throughput (`None` when no request succeeded).
    pub workload: Option<WorkloadThroughput>,
    /// Its folder (`benchmark_data.db` and the JSON files).
    pub run_dir: PathBuf,
    /// Its per-trace summary (`--multi-turn` runs; empty otherwise).
    pub trace: crate::metrics::TraceSummary,
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn run_seed(plan: &RunPlan, run_index: usize) -> u64 {
    // Shards without --seed share the seed derived from the plan fingerprint.
    let base = plan
        .params
        .seed
        .or(plan.sharding.as_ref().map(|s| s.seed))
        .unwrap_or_else(rand::random);
    base.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(run_index as u64)
}

/// The dispatcher's concurrency cap: more workers than requests would only idle (an SLA rate probe caps at
/// --sla-upper-bound).
fn dispatcher_cap(spec: &RunSpec) -> usize {
    if spec.parallel > 0 {
        (spec.parallel as usize).min(spec.total().max(1) as usize)
    } else {
        1024
    }
}

/// This process's share of the run's requests, as a feed whose producer is started and has filled its
/// look-ahead (so a run that fits in it is wholly prepared before the first request, and a dataset that
/// fails at once fails before it).
async fn prepare(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
) -> Result<(crate::shard::ShardWork, RequestFeed, Producer)> {
    let plan = ctx.plan;
    let started = std::time::Instant::now();
    let requests = super::requests::RunRequests::new(ctx, spec, seed);
    let work = crate::shard::split(
        plan.sharding.as_ref(),
        plan.mode,
        spec,
        requests.len(),
        dispatcher_cap(spec),
    );
    debug_assert_eq!(work.pick.warmup, requests.warmup());
    let (mut feed, producer) = requests.start(work.pick)?;
    let ready = feed.prime().await;
    if ready < feed.len() && !feed.producing() {
        // The producer ended early: its error says why.
        drop(feed);
        producer.finish().await?;
        anyhow::bail!("the request producer stopped after {ready} requests");
    }
    let elapsed = started.elapsed().as_secs_f64();
    if ready < feed.len() {
        tracing::info!(
            "Prepared the first {ready} of {} request bodies in {elapsed:.2} s (the rest are prepared while the run goes on)",
            feed.len()
        );
    } else {
        tracing::info!("Prepared {ready} request bodies in {elapsed:.2} s");
    }
    Ok((work, feed, producer))
}

/// Runs `spec` and writes its files under `<root>/<dir_name>`. `tracker` (`--enable-progress-tracker`) is
/// lent to the run's aggregator and handed back.
pub async fn run_single(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    run_index: usize,
    tracker: &mut Option<ProgressTracker>,
) -> Result<RunResult> {
    let plan = ctx.plan;
    let run_dir: PathBuf = plan.output_root.join(&spec.dir_name);
    std::fs::create_dir_all(&run_dir).with_context(|| format!("creating {}", run_dir.display()))?;
    let args =
        crate::plan::args::args_json(plan, spec, ctx.url.as_str(), &run_dir.to_string_lossy());
    tracing::info!("Starting benchmark with args: ");
    tracing::info!("{}", pyjson::dumps_indent4(&args));
    write_file(
        &run_dir.join("benchmark_args.json"),
        &pyjson::dumps_indent4(&args),
    )?;

    let seed = run_seed(plan, run_index);
    let (work, feed, conversations) = match &plan.multi_turn {
        // AgentX sessions are built as they are replayed.
        None if plan.agentx.is_some() => (None, None, None),
        Some(_) => (
            None,
            None,
            Some(super::multi_turn::conversations(ctx, spec, seed)?),
        ),
        None => {
            let (work, feed, producer) = prepare(ctx, spec, seed).await?;
            (Some(work), Some((feed, producer)), None)
        }
    };
    // Multi-turn and AgentX runs send no prepared requests: only the dispatcher cap matters.
    let work = work.unwrap_or_else(|| {
        crate::shard::split(
            plan.sharding.as_ref(),
            plan.mode,
            spec,
            0,
            dispatcher_cap(spec),
        )
    });
    let client = HttpClient::new(plan, ctx.url.clone(), work.parallel)?;
    // Interrupted before sending anything: the run still gets its (empty) database and a summary marked
    // interrupted, so every run folder is complete.
    let stopped_early = ctx.shutdown.stopping() || !test_connection(ctx, &client, seed).await?;
    let feed = feed.map(|(feed, producer)| {
        // Nothing is sent: the producer stops at its next hand-over.
        let feed = if stopped_early {
            RequestFeed::empty()
        } else {
            feed
        };
        (feed, producer)
    });
    if conversations.is_some() {
        super::multi_turn::log_warmup(spec);
    } else if plan.agentx.is_none() {
        // AgentX refuses --warmup-num (as evalscope): no advice to pass it.
        log_warmup(plan, spec, work.parallel);
    }

    let this = ThisRun {
        spec,
        index: run_index,
        seed,
        dir: &run_dir,
        args: &args,
        stopped_early,
    };
    let sent = Sending {
        work,
        feed,
        conversations,
    };
    let measured = dispatch(ctx, &this, &client, sent, tracker).await?;
    let mut speed_rows = None;
    if matches!(
        plan.dataset_kind(),
        Some(DatasetKind::SpeedBenchmark | DatasetKind::SpeedBenchmarkLong)
    ) {
        speed_rows = Some(export::speed_benchmark::write(&measured.db_path, &run_dir)?);
    }
    // Marked only when the signal cut the run short: a run whose every request was sent and finished is
    // complete, even if the signal came while its last requests were in flight.
    let interrupted =
        stopped_early || measured.outcome.interrupted || measured.outcome.abandoned > 0;
    let result = write_results(ctx, spec, run_dir, measured, interrupted, speed_rows).await?;
    if let Some(t) = tracker.as_mut() {
        t.run_finished();
    }
    Ok(result)
}

/// The connection test before the run (not for embedding and rerank APIs, as evalscope). `false` when a
/// signal interrupted it.
async fn test_connection(ctx: &SweepContext<'_>, client: &HttpClient, seed: u64) -> Result<bool> {
    let plan = ctx.plan;
    if !plan.test_connection || plan.api.input_only() {
        return Ok(true);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED);
    let token_ids = plan
        .tokens
        .tokenize_prompt
        .then(|| {
            ctx.prompts
                .tokenizer
                .as_ref()
                .and_then(|t| t.encode("hello").ok())
        })
        .flatten();
    let probe = BodyComposer::probe_item(plan.apply_chat_template, token_ids);
    let body = ctx.composer.connection_test(&probe, &mut rng);
    let checked = conn_test::check(client, body, plan.timeouts.total, &ctx.shutdown).await?;
    Ok(checked != conn_test::Checked::Interrupted)
}

/// The warmup line; without warmup, evalscope's burst warning, sized by `--parallel` or, in a shard, by
/// `shard_slots`, the requests this shard has in flight.
fn log_warmup(plan: &RunPlan, spec: &RunSpec, shard_slots: usize) {
    let slots = match plan.sharding {
        Some(_) => shard_slots,
        None => spec.parallel.max(0) as usize,
    };
    if spec.warmup > 0 {
        tracing::info!(
            "Warmup enabled: {} warmup requests (total: {}, benchmark: {})",
            spec.warmup,
            spec.total(),
            spec.number
        );
    } else if plan.mode == LoadMode::Closed && slots > 1 {
        tracing::warn!(
            "Warmup is disabled, so the first {p} requests are released at once against an idle server. Their TTFT carries the start-up burst and can dominate the reported percentiles. Pass --warmup-num {p} to keep that burst out of the measured window, or {} if you also read the max column.",
            2 * slots,
            p = slots
        );
    }
}

/// What sending a run's requests produced.
struct Measured {
    acc: Accumulator,
    /// `--server-metrics`: the scrape of this run, finished with its summary.
    scrape: Option<crate::server_metrics::RunScrape>,
    observers: Observers,
    outcome: engine::DispatchOutcome,
    db_path: PathBuf,
    rows: u64,
    cpu_use: crate::metrics::CpuUse,
}

/// The run being measured, as [`dispatch`] needs it.
struct ThisRun<'a> {
    spec: &'a RunSpec,
    /// Its index in the sweep.
    index: usize,
    /// Its seed (schedule, max_tokens draws).
    seed: u64,
    /// Its folder.
    dir: &'a Path,
    /// Its `benchmark_args.json` (a shard records it).
    args: &'a serde_json::Map<String, serde_json::Value>,
    /// A signal came before anything was sent.
    stopped_early: bool,
}

/// What a run sends: its share of the plan, and its prepared requests (single requests) or its
/// conversations (`--multi-turn`); AgentX runs have neither.
struct Sending {
    work: crate::shard::ShardWork,
    feed: Option<(RequestFeed, Producer)>,
    conversations: Option<Vec<crate::dataset::multi_turn::Conversation>>,
}

/// Creates the run's database, starts the aggregator, sends this process's share of the requests (all of
/// them unless sharded), and finishes the store.
async fn dispatch(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    client: &HttpClient,
    sent: Sending,
    tracker: &mut Option<ProgressTracker>,
) -> Result<Measured> {
    let (spec, run_dir) = (this.spec, this.dir);
    let Sending {
        work,
        feed,
        conversations,
    } = sent;
    let counts = (work.measured, work.slots);
    let plan = ctx.plan;
    let db_path = run_dir.join("benchmark_data.db");
    let mut store = Store::create(&db_path, plan.db_commit_interval)?;
    store.commit_on_exit(&ctx.shutdown);
    tracing::info!("Save the data base to: {}", db_path.display());
    // A multi-turn run counts conversations (its requests are built turn by turn, not prepared).
    let progress_total = if conversations.is_some() {
        spec.number
    } else {
        counts.0
    };
    let (tx, rx) = mpsc::channel(work.parallel.clamp(64, 8192));
    let aggregator = start_aggregator(ctx, this, store, rx, progress_total, tracker.take());
    let scrape =
        crate::server_metrics::start_for_run(plan.server_side.metrics.as_ref(), &ctx.url).await;
    let cpu_start = crate::resources::client_cpu();
    let sched_start = crate::resources::client_threads_sched();
    let window_start = std::time::Instant::now();
    // After the connection test and just before sending: a shard records itself and waits for --start-at.
    let shard =
        crate::shard::begin(plan, this.index, counts, run_dir, this.args, &ctx.shutdown).await?;
    let dispatch = Dispatch {
        mode: plan.mode,
        parallel: work.parallel,
        rate: spec.rate,
        duration: plan.duration,
        origin: shard.as_ref().and_then(|s| s.origin),
    };
    let (outcome, produced) = send(ctx, this, client, &dispatch, feed, conversations, tx).await;
    let mut done = aggregator.await.context("the aggregator task failed")?;
    *tracker = done.observers.tracker.take();
    let outcome = outcome?;
    if let (Some(shard), Some(began)) = (&shard, outcome.began) {
        crate::shard::finish(shard, began, run_dir, this.args)?;
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
        db_path,
        rows,
        cpu_use,
    })
}

/// Sends the run's requests (or conversations, or AgentX sessions) to `tx`; with a feed, waits for its
/// producer too and hands back its result.
async fn send(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    client: &HttpClient,
    dispatch: &Dispatch,
    feed: Option<(RequestFeed, Producer)>,
    conversations: Option<Vec<crate::dataset::multi_turn::Conversation>>,
    tx: mpsc::Sender<crate::record::RequestRecord>,
) -> (Result<engine::DispatchOutcome>, Result<()>) {
    let (plan, spec) = (ctx.plan, this.spec);
    if let Some((feed, producer)) = feed {
        let outcome = engine::run(client, dispatch, feed, tx, &ctx.shutdown).await;
        // The feed is gone: the producer stops at its next hand-over, if it has not ended.
        return (outcome, producer.finish().await);
    }
    let outcome = match (&plan.multi_turn, conversations) {
        (None, _) => match &plan.agentx {
            Some(agentx) if !this.stopped_early => {
                super::agentx::dispatch(ctx, agentx, client, spec, tx).await
            }
            _ => Ok(engine::DispatchOutcome::default()),
        },
        (Some(settings), Some(convs)) if !this.stopped_early => Ok(super::multi_turn::dispatch(
            ctx, settings, client, spec, this.seed, convs, tx,
        )
        .await),
        (Some(_), _) => {
            drop(tx);
            Ok(engine::DispatchOutcome::default())
        }
    };
    (outcome, Ok(()))
}

/// Starts the run's aggregator on the records `rx` receives, owning the store and lent the tracker.
fn start_aggregator(
    ctx: &SweepContext<'_>,
    this: &ThisRun<'_>,
    store: Store,
    rx: mpsc::Receiver<crate::record::RequestRecord>,
    progress_total: u64,
    mut tracker: Option<ProgressTracker>,
) -> tokio::task::JoinHandle<super::aggregate::Aggregated> {
    let (plan, spec, run_dir) = (ctx.plan, this.spec, this.dir);
    let mut acc = Accumulator::spilling_in(
        SummaryContext {
            concurrency: spec.parallel,
            request_rate: spec.rate,
            input_only: plan.api.input_only(),
            pd_metrics: plan.pd_metrics,
        },
        run_dir,
    );
    acc.set_goodput(plan.goodput.clone());
    let progress =
        crate::progress::Progress::new(format!("Processing[{}]", spec.dir_name), progress_total);
    if let Some(t) = &mut tracker {
        t.run_started(&spec.dir_name);
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
        },
    ))
}

/// The run's summary, percentiles and workload files, logged and written as soon as the run ends.
async fn write_results(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    run_dir: PathBuf,
    measured: Measured,
    interrupted: bool,
    speed_rows: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
) -> Result<RunResult> {
    let Measured {
        acc,
        scrape,
        observers,
        rows,
        cpu_use,
        ..
    } = measured;
    let mut summary = acc.summary();
    summary.extras.interrupted = interrupted;
    summary.extras.client = acc.client_diagnostics(cpu_use, ctx.plan.mode == LoadMode::Open);
    if let Some(warning) = summary
        .extras
        .client
        .as_ref()
        .and_then(|c| c.limit_message())
    {
        tracing::warn!("{warning}");
    }
    if let Some(built) = &ctx.prompts.replay {
        let n = (spec.number as usize).min(built.input_tokens.len());
        let keys = observers.replay.keys(
            acc.send_lag_percentiles(),
            &built.input_tokens[..n],
            &built.implied_cached_tokens[..n],
        );
        tracing::info!(
            "Trace replay fidelity: {}",
            keys.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        summary.extras.appended.extend(keys);
    }
    summary
        .extras
        .appended
        .extend(observers.reasoning.summary_keys());
    crate::server_metrics::finish_for_run(scrape, &run_dir, &mut summary).await;
    let percentiles = acc.percentiles();
    let spilled_bytes = acc.spilled_bytes() + observers.timeline.spilled_bytes();
    if spilled_bytes > 0 {
        tracing::info!(
            "Exact percentiles: {:.1} MiB of samples were kept in temporary files (removed at the end of the run) instead of in memory",
            spilled_bytes as f64 / 1048576.0
        );
    }
    if let Some(e) = &summary.extras.input_token_error {
        let line = format!(
            "Input length check ({} requests): server prompt_tokens − intended: mean {}, max {}, exact {}% (intended mean {})",
            e.requests, e.avg_error, e.max_error, e.exact_pct, e.avg_intended
        );
        if e.exact_pct < 100.0 {
            tracing::warn!("{line}: the server counts prompts differently from --tokenizer-path (another tokenizer or chat template?)");
        } else {
            tracing::info!("{line}");
        }
    }
    write_file(
        &run_dir.join("benchmark_summary.json"),
        &summary.to_json_string(),
    )?;
    write_file(
        &run_dir.join("benchmark_percentile.json"),
        &percentiles.to_json_string(),
    )?;
    tracing::info!("\n{}", export::console::summary_table(&summary));
    tracing::info!("\n{}", export::console::percentile_table(&percentiles));
    let trace = observers.trace.summary();
    super::multi_turn::write_trace_summary(&run_dir, &trace)?;
    // Like evalscope, the workload files exist only when a request succeeded.
    let workload = observers.timeline.throughput();
    if let Some(w) = &workload {
        write_file(
            &run_dir.join("workload_throughput.json"),
            &w.to_json_string(),
        )?;
        observers
            .timeline
            .write_json_file(&run_dir.join("workload_timeline.json"))?;
        tracing::info!("\n{}", export::console::workload_table(w));
    }
    if let Some(speeds) = &speed_rows {
        let table = export::speed_benchmark::table(speeds);
        tracing::info!("\nSpeed Benchmark Results:\n{table}");
    }
    if let Some(speeds) = &speed_rows {
        let table = export::speed_benchmark::table(speeds);
        tracing::info!("\nSpeed Benchmark Results:\n{table}");
    }
    tracing::info!(
        "Save the summary to: {} ({rows} requests stored)",
        run_dir.display()
    );
    ctx.tally.run_finished(&spec.dir_name, &summary);
    if let Some(feed) = &ctx.visualizer {
        feed.summary(&spec.dir_name, &summary.to_json_string());
    }
    Ok(RunResult {
        spec: spec.clone(),
        summary,
        percentiles,
        interrupted,
        workload,
        run_dir,
        trace,
    })
}
