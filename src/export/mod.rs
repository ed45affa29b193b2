//! Output files and text, one file per format, matching `evalscope perf` 1.14.1:
//!
//! * [`console`]: `Benchmarking summary:`, `Percentile results:` and `Workload throughput` tables.
//! * [`report`]: the whole end-of-sweep text report.
//! * [`html`]: `perf_report.html`, the self-contained report with charts (llmperf's own layout).
//! * [`speed_benchmark`]: the speed table file (speed_benchmark datasets).

pub mod console;
pub mod html;
pub mod report;
pub mod speed_benchmark;

#[cfg(test)]
mod golden_tests;
