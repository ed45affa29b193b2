//! Text layout shared by every writer of human-readable output (the console tables, the reports, the
//! metrics' trace tables and the SLA tables), a leaf below `metrics`, `export` and `sla`:
//!
//! * [`format`](mod@format): evalscope's number formatting (half-up on the shortest repr, units per metric).
//! * [`table`]: tabulate `simple_outline` and rich `SQUARE` / `HEAVY_HEAD` / panel renderers.

pub mod format;
pub mod table;
