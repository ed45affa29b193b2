//! Run statistics: the evalscope-exact summary ([`BenchmarkSummary`]) and percentile table
//! ([`PercentileTable`]), accumulated online by one owner ([`Accumulator`]).

mod accumulator;
mod percentile;
mod summary;

pub use accumulator::{Accumulator, SummaryContext};
pub use percentile::{nearest_rank, PercentileTable, PERCENTILE_LABELS};
pub use summary::{BenchmarkSummary, SummaryExtras};
