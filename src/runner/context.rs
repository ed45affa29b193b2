//! What the runner's files share: the sweep's context, lent to every run, and a run's outcome.

use std::sync::Arc;

use crate::api::openai::BodyComposer;
use crate::dataset::Prompts;
use crate::metrics::{BenchmarkSummary, PercentileTable, TraceSummary, WorkloadThroughput};
use crate::plan::{RunPlan, RunSpec};
use crate::run_folder::{RunDir, RunRoot};
use crate::shutdown::Shutdown;
use crate::visualizer::VisualizerFeed;

/// What a sweep shares between its runs.
pub struct SweepContext<'a> {
    /// The plan.
    pub plan: &'a RunPlan,
    /// Where the results go.
    pub root: RunRoot,
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
    /// The sweep's seed, from which each run's is derived: `--seed`, a shard's shared seed, or one random
    /// draw (so the repeats of a point can share their point's prompts).
    pub seed: u64,
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
    /// Its folder.
    pub dir: RunDir,
    /// Its per-trace summary (`--multi-turn` runs; empty otherwise).
    pub trace: TraceSummary,
}
