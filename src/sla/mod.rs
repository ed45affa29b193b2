//! SLA auto-tune (`--sla-auto-tune`): evalscope 1.14.1's capacity search, and llmperf's confidence
//! interval search (`--sla-confidence`).
//!
//! * [`probe`]: one probed value, its runs averaged as evalscope averages them;
//! * [`search`] and [`optimize`]: the search, step for step as evalscope walks it;
//! * [`confidence`]: repeated probes, Student-t intervals, the limit as an interval;
//! * [`report`]: `sla_summary.json`, the `Probes` / `Selections` tables, `performance_summary.txt`.
//!
//! The checked settings ([`crate::plan::sla::SlaPlan`]) and the criteria of `--sla-params`
//! ([`crate::plan::sla::criterion`]) are made at plan time; the runs of each probe go through the normal
//! run machinery in `runner::sla`, into `sla_tuning/sla_<var>_<value>_run_<i>/`.

pub mod confidence;
pub mod optimize;
pub mod probe;
pub mod report;
pub mod search;

#[cfg(test)]
mod golden_tests;
