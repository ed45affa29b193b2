//! Online accumulation of finished records into a summary and percentiles.

/// Placeholder until the accumulator lands.
pub struct Accumulator;
/// Placeholder until the accumulator lands.
pub struct SummaryContext;
