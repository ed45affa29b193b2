//! One run as the page shows it: its report, summary and charted data, and its server series.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::data::RunData;
use crate::export::report::RunReport;

/// One run as the page shows it.
pub struct RunView {
    /// The run folder's name within its root.
    pub name: String,
    /// Summary, percentiles and workload.
    pub report: RunReport,
    /// The run's summary file, parsed (its keys after evalscope's are llmperf's diagnostics).
    pub summary: serde_json::Map<String, serde_json::Value>,
    /// Histograms, timeline, token rate.
    pub data: RunData,
    /// The server's series (with `--server-metrics`).
    pub server: Option<ServerView>,
}

/// A run's server series and the origin of its timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    /// The server's series, parsed.
    pub json: Value,
    /// The run's first `start_time` (the timeline's 0), when it stored a request.
    pub t0_s: Option<f64>,
}

impl ServerView {
    /// The view of a run's server series `json`, its timeline starting at the first `start_time` in `db`.
    pub fn new(json: Value, db: &Path) -> ServerView {
        let t0_s = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()
            .and_then(|c| {
                c.query_row("SELECT MIN(start_time) FROM result", [], |r| {
                    r.get::<_, Option<f64>>(0)
                })
                .ok()
                .flatten()
            });
        ServerView { json, t0_s }
    }
}
