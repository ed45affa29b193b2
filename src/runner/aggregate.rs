//! The one owner of a run's results: receives every finished record, feeds the accumulator, the progress
//! display, the store and the [`Observers`] (workload timeline, visualizer, `progress.json`, the live
//! view's batches), and logs the running summary every `--log-every-n-query` requests.

use tokio::sync::mpsc;

use super::tracker::ProgressTracker;
use crate::api::usage_fallback::UsageFallback;
use crate::metrics::{Accumulator, TraceAccumulator, WorkloadTimeline};
use crate::progress::Progress;
use crate::record::RequestRecord;
use crate::store::Store;
use crate::visualizer::VisualizerFeed;

/// Most records handed to the store at once.
const STORE_BATCH: usize = 256;

/// Most records waiting for the store; beyond it the aggregator waits (and, through the bounded channel,
/// so do the requests), keeping memory bounded when the disk is slower than the server.
const MAX_STORE_BACKLOG: usize = 2048;

/// What the aggregator feeds besides the accumulator, the progress display and the store; handed back
/// when the run ends.
#[derive(Default)]
pub struct Observers {
    /// Cumulative tokens against completion time (`workload_*.json`).
    pub timeline: WorkloadTimeline,
    /// `--visualizer`: gets the running metrics message after every measured request.
    pub visualizer: Option<VisualizerFeed>,
    /// `--enable-progress-tracker`: counts measured requests into `progress.json`.
    pub tracker: Option<ProgressTracker>,
    /// `--multi-turn`: turns grouped by conversation (`trace_summary.json`).
    pub trace: TraceAccumulator,
    /// Replayed traces: send lag and cached tokens against the trace.
    pub replay: crate::metrics::replay::ReplayFidelity,
    /// Reasoning vs answer statistics (summary keys when any response carried reasoning).
    pub reasoning: crate::reasoning::ReasoningStats,
    /// Tool-call and JSON-output statistics (summary keys when a request offered tools or asked for JSON).
    pub tool_calls: crate::tool_calls::ToolCallStats,
    /// `--ui dashboard` / `--metrics-listen`: the run's live counts, published with each store batch.
    pub live: Option<crate::live::PointFeed>,
}

/// What the aggregator completes on each record before counting it: token counts for responses that
/// carried no usage (counted here once per finished request, never on the request path), the
/// reasoning split, and the tool-call / JSON-output outcome. (The intended prompt length comes with the
/// record, from its prepared request.)
pub struct Completion {
    /// Counts tokens with the tokenizer when the server sent no usage.
    pub counter: UsageFallback,
    /// Runs whose bodies may carry `tools` or `response_format` only.
    pub tools: Option<crate::tool_calls::Analyzer>,
}

impl Completion {
    fn apply(&mut self, record: &mut RequestRecord) {
        self.counter.fill(record);
        record.reasoning = crate::reasoning::split(record, self.counter.tokenizer.as_deref());
        if let Some(tools) = &mut self.tools {
            tools.apply(record);
        }
    }
}

/// The token counter for responses without usage: the run's tokenizer and the plan's template settings.
pub fn usage_fallback(
    plan: &crate::plan::RunPlan,
    prompts: &crate::dataset::Prompts,
) -> UsageFallback {
    UsageFallback {
        tokenizer: prompts.tokenizer.clone(),
        input_only: plan.api.input_only(),
        template_kwargs: crate::dataset::template_kwargs(plan),
        image_patch: (plan.image.width, plan.image.height, plan.image.patch_size),
        responses: plan.api == crate::plan::ApiKind::Responses,
        rerank: plan.api == crate::plan::ApiKind::Rerank,
    }
}

/// What the aggregator hands back when the run ends.
pub struct Aggregated {
    /// The statistics.
    pub acc: Accumulator,
    /// The progress display (to finish).
    pub progress: Progress,
    /// The observers.
    pub observers: Observers,
    /// The store (to finish).
    pub store: Store,
}

/// Consumes records until every sender is gone; hands back the accumulator, the progress display, the
/// observers and the store.
///
/// Records go to the store in batches: whatever arrived while the previous records were being counted
/// (at most [`STORE_BATCH`]), handed over as soon as the channel is momentarily empty, so the writer thread
/// is woken once per batch rather than once per request, and a slow trickle is still stored at once.
/// (`recv` takes part in the runtime's cooperative budget, so a long backlog never starves request tasks.)
pub async fn aggregate(
    mut records: mpsc::Receiver<RequestRecord>,
    mut acc: Accumulator,
    mut progress: Progress,
    store: Store,
    log_every_n: u64,
    mut observers: Observers,
    mut completion: Completion,
) -> Aggregated {
    let mut measuring = false;
    let mut batch: Vec<RequestRecord> = Vec::new();
    while let Some(mut record) = records.recv().await {
        // A conversation advances the progress once, with its last turn.
        let counts = record.turn.is_none_or(|t| t.is_last);
        if record.is_warmup {
            if let Some(live) = &mut observers.live {
                live.warmup_finished();
            }
            if counts {
                progress.warmup_finished();
            }
            // Only its send and end: the load verdict counts it in flight (it held a slot).
            acc.add(&record);
            continue;
        }
        completion.apply(&mut record);
        if !measuring {
            measuring = true;
            progress.start_clock_at(record.sent_at);
        }
        acc.add(&record);
        observers.trace.feed(&record);
        observers.replay.feed(&record);
        observers.timeline.feed_record(&record);
        observers.reasoning.add(&record);
        observers.tool_calls.add(&record);
        if let Some(live) = &mut observers.live {
            live.record(&record);
        }
        if let (true, Some(tracker)) = (counts, &mut observers.tracker) {
            tracker.request_done();
        }
        if let Some(feed) = &observers.visualizer {
            feed.log(&acc.running_message_json());
        }
        if counts {
            progress.finished(record.success);
        }
        if acc.total().is_multiple_of(log_every_n) {
            tracing::info!("{}", acc.running_log_json());
        }
        batch.push(record);
        if batch.len() >= STORE_BATCH || records.is_empty() {
            if let Some(live) = &mut observers.live {
                live.publish();
            }
            store.insert_batch(std::mem::take(&mut batch));
            while store.backlog() > MAX_STORE_BACKLOG {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    }
    if !batch.is_empty() {
        store.insert_batch(batch);
    }
    if let Some(live) = observers.live.take() {
        live.finish();
    }
    Aggregated {
        acc,
        progress,
        observers,
        store,
    }
}
