//! Reading a run's rows back from its database (llmperf's or evalscope's: the same table), as the
//! numbers other result formats are computed from. llmperf's own columns are read where the table has
//! them (an evalscope database has none).

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};

use super::layout::RunDir;

/// One stored request, its timing columns in seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredRow {
    /// `success`.
    pub success: bool,
    /// `is_stream`.
    pub is_stream: bool,
    /// `start_time` (send time).
    pub start_time: f64,
    /// `completed_time`.
    pub completed_time: f64,
    /// `latency` (successes).
    pub latency: Option<f64>,
    /// `first_chunk_latency`: TTFT (successes).
    pub ttft: Option<f64>,
    /// `prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `inter_token_latencies`: gaps between output chunks.
    pub itl: Vec<f64>,
    /// `error` (llmperf's column).
    pub error: Option<String>,
    /// `scheduled_time` (llmperf's column): when the request was meant to be sent.
    pub scheduled_time: Option<f64>,
}

impl RunDir {
    /// Every row of the run's database, in the order stored (completion order).
    pub fn read_rows(&self) -> Result<Vec<StoredRow>> {
        let path = self.database();
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", path.display()))?;
        let columns: Vec<String> = conn
            .prepare("SELECT * FROM result LIMIT 0")
            .with_context(|| format!("{}: no result table", path.display()))?
            .column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let has = |c: &str| columns.iter().any(|x| x == c);
        let extra = |c: &'static str| if has(c) { c } else { "NULL" };
        let sql = format!(
            "SELECT success, is_stream, start_time, completed_time, latency, first_chunk_latency, \
             prompt_tokens, completion_tokens, inter_token_latencies, {}, {} FROM result ORDER BY rowid",
            extra("error"),
            extra("scheduled_time"),
        );
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([], |r| {
            let itl: Option<String> = r.get(8)?;
            Ok(StoredRow {
                success: r.get::<_, Option<i64>>(0)?.unwrap_or(0) == 1,
                is_stream: r.get::<_, Option<i64>>(1)?.unwrap_or(0) == 1,
                start_time: r.get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                completed_time: r.get::<_, Option<f64>>(3)?.unwrap_or(0.0),
                latency: r.get(4)?,
                ttft: r.get(5)?,
                prompt_tokens: r.get::<_, Option<i64>>(6)?.map(|v| v.max(0) as u64),
                completion_tokens: r.get::<_, Option<i64>>(7)?.map(|v| v.max(0) as u64),
                itl: itl
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_default(),
                error: r.get(9)?,
                scheduled_time: r.get(10)?,
            })
        })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .with_context(|| format!("reading {}", path.display()))
    }
}
