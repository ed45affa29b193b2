//! Run statistics: the evalscope-exact summary ([`BenchmarkSummary`]) and percentile table
//! ([`PercentileTable`]), accumulated online by one owner ([`Accumulator`]).

mod accumulator;
mod percentile;
mod samples;
mod summary;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests;

pub use accumulator::{Accumulator, SummaryContext};
pub use percentile::{nearest_rank, PercentileTable, PERCENTILE_LABELS};
pub use summary::{BenchmarkSummary, InputTokenError, SummaryExtras};
