//! Statistics behind llmperf's verdicts, in one leaf module: distributions ([`dist`]: normal, Student's t,
//! binomial), a sample's spread and t interval ([`spread`]: SLA confidence, repeat summaries),
//! distribution-free percentile intervals ([`quantile`]) and the interval of a change between two runs
//! ([`change`]: `llmperf compare`). No other module of the crate is used here.

pub mod change;
pub mod dist;
pub mod quantile;
pub mod spread;

pub use change::{Change, Changes, Interval, MeanEstimate, QuantileEstimate};
pub use spread::{spread, Spread};
