//! One run of a sweep: its folder and arguments, what it sends (prepared ahead of the dispatcher for
//! single requests, see [`super::requests`]; conversations; agent sessions), the connection test, the
//! dispatch ([`super::dispatch`]) and the run's files, written as soon as it ends ([`super::results`]) so a
//! later failure cannot lose them.

use anyhow::Result;
use rand::SeedableRng;

use super::context::{RunResult, SweepContext};
use super::dispatch::{dispatch, Payload, Sending, ThisRun};
use super::tracker::ProgressTracker;
use crate::api::openai::BodyComposer;
use crate::engine::{conn_test, HttpClient};
use crate::plan::{RunPlan, RunSpec, Workload};
use crate::pyjson;

/// Open loop has no concurrency cap: the client keeps up to this many connections per run.
const OPEN_LOOP_CONNECTIONS: usize = 1024;

/// The sweep's seed: `--seed`, else (shards without `--seed`) the seed derived from the plan fingerprint,
/// else one random draw.
pub(super) fn sweep_seed(plan: &RunPlan) -> u64 {
    plan.params
        .seed
        .or(plan.sharding.as_ref().map(|s| s.seed))
        .unwrap_or_else(rand::random)
}

/// The seed of the run at `index` (a repeat with the same prompts: its point's index).
pub(super) fn run_seed(sweep_seed: u64, index: usize) -> u64 {
    sweep_seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64)
}

/// This process's share of the run, and what it sends: single requests as a feed whose producer is
/// started and has filled its look-ahead (so a run that fits in it is wholly prepared before the first
/// request, and a dataset that fails at once fails before it), the conversations of a multi-turn run, or
/// an AgentX run's sessions (built as they are replayed).
async fn prepare(ctx: &SweepContext<'_>, spec: &RunSpec, seed: u64) -> Result<Sending> {
    let plan = ctx.plan;
    let workers = spec.workers(OPEN_LOOP_CONNECTIONS);
    let payload = match &plan.workload {
        Workload::MultiTurn(settings) => Payload::Conversations {
            settings: settings.clone(),
            conversations: super::multi_turn::conversations(ctx, spec, seed)?,
        },
        Workload::AgentGraph(agentx) => Payload::Sessions(agentx.clone()),
        Workload::SingleTurn | Workload::WorkloadTrace(_) | Workload::Replay(_) => {
            return super::requests::prepare(ctx, spec, seed, workers).await;
        }
    };
    // Conversations and sessions are not split into prepared requests: only the dispatcher cap matters.
    let work = crate::shard::split(plan.sharding.as_ref(), spec, 0, workers);
    Ok(Sending { work, payload })
}

/// Runs `spec` and writes its files into its folder. `tracker` (`--enable-progress-tracker`) is lent to
/// the run's aggregator and handed back.
pub async fn run_single(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    run_index: usize,
    tracker: &mut Option<ProgressTracker>,
) -> Result<RunResult> {
    let plan = ctx.plan;
    let dir = ctx.root.run(spec);
    dir.create()?;
    let args =
        crate::plan::args::args_json(plan, spec, ctx.url.as_str(), &dir.path().to_string_lossy());
    tracing::info!("Starting benchmark with args: ");
    tracing::info!("{}", pyjson::dumps_indent4(&args));
    dir.write_args(&args)?;

    let seed = run_seed(ctx.seed, plan.repeats.seed_index(spec.role, run_index));
    let mut sending = prepare(ctx, spec, seed).await?;
    let client = HttpClient::new(plan, ctx.url.clone(), sending.work.parallel)?;
    // Interrupted before sending anything: the run still gets its (empty) database and a summary marked
    // interrupted, so every run folder is complete.
    let stopped_early = ctx.shutdown.stopping() || !test_connection(ctx, seed).await?;
    if stopped_early {
        sending.payload = sending.payload.nothing();
    }
    match &plan.workload {
        Workload::MultiTurn(_) => super::multi_turn::log_warmup(spec),
        // AgentX refuses --warmup-num (as evalscope): no advice to pass it.
        Workload::AgentGraph(_) => {}
        _ => log_warmup(plan, spec, sending.work.parallel),
    }
    let this = ThisRun {
        spec,
        index: run_index,
        seed,
        dir: &dir,
        args: &args,
    };
    let mut measured = dispatch(ctx, &this, &client, sending, tracker).await?;
    super::control::stop_before_load(&measured.control, &dir)?;
    let control_error = measured.control.1.take();
    let result = super::results::write(ctx, spec, dir, measured, stopped_early).await?;
    super::control::stop_after_run(control_error)?;
    if let Some(t) = tracker.as_mut() {
        t.run_finished();
    }
    Ok(result)
}

/// The connection test before the run (not for embedding and rerank APIs, as evalscope). `false` when a
/// signal interrupted it. It goes through a client of its own, as evalscope's does (a fresh client): its
/// connection is closed with it, so the run's first requests open theirs, in their TTFT and their
/// connection phases, as every later connection is.
async fn test_connection(ctx: &SweepContext<'_>, seed: u64) -> Result<bool> {
    let plan = ctx.plan;
    if !plan.test_connection || plan.api.input_only() {
        return Ok(true);
    }
    let client = HttpClient::new(plan, ctx.url.clone(), 1)?;
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
    let checked = conn_test::check(&client, body, plan.timeouts.total, &ctx.shutdown).await?;
    Ok(checked != conn_test::Checked::Interrupted)
}

/// The warmup line; without warmup, evalscope's burst warning, sized by `--parallel` or, in a shard, by
/// `shard_slots`, the requests this shard has in flight.
fn log_warmup(plan: &RunPlan, spec: &RunSpec, shard_slots: usize) {
    if spec.warmup > 0 {
        tracing::info!(
            "Warmup enabled: {} warmup requests (total: {}, benchmark: {})",
            spec.warmup,
            spec.total(),
            spec.number
        );
        return;
    }
    let slots = match (&plan.sharding, spec.load.parallel()) {
        (_, None) => None,
        (Some(_), Some(_)) => Some(shard_slots),
        (None, Some(p)) => Some(p.get()),
    };
    match slots {
        Some(p) if p > 1 => tracing::warn!(
            "Warmup is disabled, so the first {p} requests are released at once against an idle server. Their TTFT carries the start-up burst and can dominate the reported percentiles. Pass --warmup-num {p} to keep that burst out of the measured window, or {} if you also read the max column.",
            2 * p,
        ),
        _ => {}
    }
}
