//! Output files and text, one file per format, matching `evalscope perf` 1.14.1:
//!
//! * [`args`](mod@args): `benchmark_args.json`.
//! * [`format`](mod@format): evalscope's number formatting (half-up on the shortest repr, units per metric).
//! * [`table`]: tabulate `simple_outline` and rich `SQUARE` / `HEAVY_HEAD` / panel renderers.
//! * [`console`]: `Benchmarking summary:`, `Percentile results:` and `Workload throughput` tables.
//! * [`report`]: the whole `performance_summary.txt`.
//! * [`html`]: `perf_report.html`, the self-contained report with charts (llmperf's own layout).
//! * [`speed_benchmark`]: `speed_benchmark.json` (speed_benchmark datasets).

pub mod args;
pub mod console;
pub mod format;
pub mod html;
pub mod report;
mod report_trace;
pub mod speed_benchmark;
pub mod table;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod report_tests;

pub use console::{percentile_table, summary_table, workload_table};
pub use format::{fmt_num, Unit};
pub use report::{performance_summary, ReportInfo, RunReport};
