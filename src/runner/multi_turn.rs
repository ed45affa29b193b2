//! The `--multi-turn` parts of one run: its conversations and their dispatch through the conversation
//! driver.

use anyhow::Result;
use tokio::sync::mpsc;

use super::context::SweepContext;
use crate::dataset::multi_turn::Conversation;
use crate::engine::conversation::{self, ConversationRun};
use crate::engine::{DispatchOutcome, HttpClient};
use crate::plan::{MultiTurnSettings, RunSpec};
use crate::record::RequestRecord;

/// The run's conversations (warmup first).
pub(super) fn conversations(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
) -> Result<Vec<Conversation>> {
    let started = std::time::Instant::now();
    let convs = ctx
        .prompts
        .conversations(spec.total() as usize, spec.dataset_offset, seed)?;
    let turns: usize = convs.iter().map(Vec::len).sum();
    tracing::info!(
        "Loaded {} conversations ({turns} turns) in {:.2} s",
        convs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(convs)
}

/// Logs evalscope's warmup lines for a multi-turn run.
pub(super) fn log_warmup(spec: &RunSpec) {
    if spec.warmup > 0 {
        tracing::info!(
            "Warmup enabled: {} warmup conversations (benchmark: {})",
            spec.warmup,
            spec.number
        );
    }
    let parallel = spec.load.parallel().map_or(1, |p| p.get() as u64);
    if parallel <= 1 {
        return;
    }
    if spec.warmup == 0 {
        tracing::warn!(
            "Multi-turn warmup is disabled; the first measured cohort may start against an idle server. Use --warmup-num {parallel} or higher to cover every concurrency slot."
        );
    } else if spec.warmup < parallel {
        tracing::warn!(
            "Multi-turn warmup covers only {} of the {parallel} concurrency slots; {} measured conversation(s) may still be released in the opening cohort.",
            spec.warmup,
            parallel - spec.warmup
        );
    }
}

/// Runs the conversations, one record per turn to `records`.
pub(super) async fn dispatch(
    ctx: &SweepContext<'_>,
    settings: &MultiTurnSettings,
    client: &HttpClient,
    spec: &RunSpec,
    seed: u64,
    conversations: Vec<Conversation>,
    records: mpsc::Sender<RequestRecord>,
) -> DispatchOutcome {
    let run = ConversationRun {
        conversations,
        total: spec.total() as usize,
        warmup: spec.warmup as usize,
        parallel: spec.load.parallel().map_or(1, |p| p.get()),
        pacing: spec.load.schedule_rate(),
        duration: ctx.plan.duration,
        max_turns: settings.max_turns,
        think_time: settings.args.think_time,
        session_header: settings.session_header.clone(),
        seed,
        models: ctx.plan.traffic.models.clone(),
    };
    conversation::run(client, &ctx.composer, run, records, &ctx.shutdown).await
}
