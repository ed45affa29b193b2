//! evalscope's external performance scenarios, replayed by llmperf itself. Today: `--scenario agentx`
//! (InferenceX AgentX: recorded coding-agent sessions of the `cc-traces-weka-062126` data sets). evalscope
//! hands these to AIPerf; llmperf parses the trace ([`weka`]), turns each session into a graph of calls
//! with their recorded pauses ([`dag`]) and replays it with its own engine (`engine::dag`).
//!
//! This module holds the plan-time half only: the scenario value ([`config`]), the data set's provenance
//! ([`provenance`]), the trace and its graphs. It uses nothing above `hub`, so `plan`, `dataset`, `engine`
//! and `runner` can all read its types.

pub mod config;
pub mod dag;
pub mod error;
pub mod provenance;
pub mod weka;

pub use config::{AgentX, Variant};
pub use dag::{Graph, Node};
pub use error::ScenarioError;
pub use provenance::Provenance;

/// evalscope's seed when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 20260707;
/// Benchmark mode's duration when `--duration` is not given, seconds.
pub const DEFAULT_DURATION_S: f64 = 1800.0;
/// Smoke mode's duration when `--duration` is not given, seconds.
pub const SMOKE_DURATION_S: f64 = 60.0;
/// Benchmark mode's shortest `--duration`, seconds.
pub const MIN_BENCHMARK_DURATION_S: f64 = 900.0;
