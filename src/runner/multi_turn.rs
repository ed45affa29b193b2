//! The `--multi-turn` parts of one run: its conversations, their dispatch through the conversation
//! driver, and `trace_summary.json`.

use std::path::Path;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

use super::single::SweepContext;
use crate::dataset::multi_turn::Conversation;
use crate::engine::conversation::{self, ConversationRun};
use crate::engine::{DispatchOutcome, HttpClient};
use crate::metrics::TraceSummary;
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
    if spec.parallel <= 1 {
        return;
    }
    if spec.warmup == 0 {
        tracing::warn!(
            "Multi-turn warmup is disabled; the first measured cohort may start against an idle server. Use --warmup-num {} or higher to cover every concurrency slot.",
            spec.parallel
        );
    } else if (spec.warmup as i64) < spec.parallel {
        tracing::warn!(
            "Multi-turn warmup covers only {} of the {} concurrency slots; {} measured conversation(s) may still be released in the opening cohort.",
            spec.warmup,
            spec.parallel,
            spec.parallel - spec.warmup as i64
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
        parallel: spec.parallel.max(1) as usize,
        rate: spec.rate,
        duration: ctx.plan.duration,
        max_turns: settings.max_turns,
        think_time: settings.args.think_time,
        session_header: settings.session_header.clone(),
        seed,
    };
    conversation::run(client, &ctx.composer, run, records, &ctx.shutdown).await
}

/// Writes `trace_summary.json` and logs the per-trace table, when any trace succeeded.
pub(super) fn write_trace_summary(run_dir: &Path, trace: &TraceSummary) -> Result<()> {
    if trace.is_empty() {
        return Ok(());
    }
    let path = run_dir.join("trace_summary.json");
    std::fs::write(&path, trace.to_json_string())
        .with_context(|| format!("writing {}", path.display()))?;
    tracing::info!(
        "\nPer-trace summary ({} traces):\n{}",
        trace.n_traces,
        trace.to_table()
    );
    Ok(())
}
