//! SLA auto-tune (`--sla-auto-tune`): evalscope 1.14.1's capacity search, and llmperf's confidence
//! interval search (`--sla-confidence`).
//!
//! * [`probe`]: one probed value, its runs averaged as evalscope averages them;
//! * [`tuner`]: the search's state, the probes cached by value, and where the runs come from;
//! * [`search`] and [`optimize`]: the search, step for step as evalscope walks it;
//! * [`confidence`]: repeated probes, Student-t intervals, the limit as an interval;
//! * [`report`]: `sla_summary.json`, the `Probes` / `Selections` tables, the end-of-sweep text report.
//!
//! The checked settings ([`crate::plan::sla::SlaPlan`]) and the criteria of `--sla-params`
//! ([`crate::plan::sla::criterion`]) are made at plan time; the runs of each probe go through the normal
//! run machinery in `runner::sla`, each into its own run folder.

pub mod confidence;
pub mod optimize;
pub mod probe;
pub mod report;
pub mod search;
pub mod tuner;

#[cfg(test)]
mod golden_tests;
