//! Run statistics: the evalscope-exact summary ([`BenchmarkSummary`]) and percentile table
//! ([`PercentileTable`]), accumulated online by one owner ([`Accumulator`]); and the workload throughput
//! timeline ([`WorkloadTimeline`]).

mod accumulator;
mod client;
mod first_errors;
pub mod goodput;
pub mod load;
mod nearest_rank;
mod pd;
mod percentile;
pub mod phases;
pub mod replay;
mod samples;
mod spill;
pub(crate) mod sql_stats;
mod summary;
pub mod trace;
mod workload;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests;

pub use accumulator::{Accumulator, SummaryContext};
pub use client::{
    ClientDiagnostics, CpuUse, FromSchedule, CPU_LIMIT_PCT, LAG_LIMIT_CLOSED, LAG_LIMIT_OPEN,
    SCHED_DELAY_LIMIT,
};
pub use first_errors::FirstError;
pub use goodput::{GoodputCounter, GoodputSlos, GoodputSummary};
pub use nearest_rank::{nearest_rank, PERCENTILE_LABELS};
pub use percentile::{columns, PercentileTable};
pub(crate) use samples::Sample;
pub use summary::{BenchmarkSummary, InputTokenError, SummaryExtras};
pub use trace::{TraceAccumulator, TraceSummary};
pub use workload::{
    WorkloadRow, WorkloadThroughput, WorkloadTimeline, LAST_WINDOW_S, WARMUP_FRAC, WORKLOAD_METRICS,
};
