//! The columns of a run's stored rows that the load verdict needs, read from its database (a run's own,
//! or a merged one: every shard's rows on one time base).

use std::path::Path;

use anyhow::Result;

/// One stored request, as the load verdict sees it (times in seconds on the database's time base).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadRow {
    /// `scheduled_time`: the intended send time.
    pub scheduled_s: Option<f64>,
    /// `start_time`: the send.
    pub start_s: f64,
    /// `completed_time`: the end (response read, or the failure).
    pub end_s: f64,
    /// `failure_kind` (`None` for a success).
    pub failure_kind: Option<String>,
    /// `conversation_id` (multi-turn).
    pub conversation: Option<i64>,
    /// `status_code`: `None` when no response head was read.
    pub status: Option<i64>,
    /// The columns the plateau's metrics need ([`super::plateau`]).
    pub metrics: RowMetrics,
}

/// A stored request's outcome columns, for the plateau's headline metrics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RowMetrics {
    /// `success`.
    pub success: bool,
    /// `is_stream`.
    pub stream: bool,
    /// `prompt_tokens` (0 when NULL).
    pub prompt_tokens: u64,
    /// `completion_tokens` (0 when NULL).
    pub completion_tokens: u64,
    /// `first_chunk_latency`: TTFT, seconds.
    pub ttft_s: Option<f64>,
    /// `time_per_output_token`: TPOT, seconds (evalscope's per-request definition).
    pub tpot_s: Option<f64>,
    /// `latency`, seconds.
    pub latency_s: Option<f64>,
}

/// Every row of the database at `db`, in storage order: the in-memory reference the streamed verdict
/// and plateau ([`super::judge_db`]) are tested against.
pub fn read_rows(db: &Path) -> Result<Vec<LoadRow>> {
    let conn = crate::metrics::sql_stats::open_read_only(db)?;
    let mut stmt = conn.prepare(
        "SELECT scheduled_time, start_time, completed_time, failure_kind, conversation_id, success, is_stream, \
         prompt_tokens, completion_tokens, first_chunk_latency, time_per_output_token, latency, status_code \
         FROM result",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(LoadRow {
                scheduled_s: r.get(0)?,
                start_s: r.get::<_, Option<f64>>(1)?.unwrap_or(f64::NAN),
                end_s: r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
                failure_kind: r.get(3)?,
                conversation: r.get(4)?,
                metrics: RowMetrics {
                    success: r.get::<_, Option<i64>>(5)?.unwrap_or(0) != 0,
                    stream: r.get::<_, Option<i64>>(6)?.unwrap_or(0) != 0,
                    prompt_tokens: r.get::<_, Option<i64>>(7)?.unwrap_or(0).max(0) as u64,
                    completion_tokens: r.get::<_, Option<i64>>(8)?.unwrap_or(0).max(0) as u64,
                    ttft_s: r.get(9)?,
                    tpot_s: r.get(10)?,
                    latency_s: r.get(11)?,
                },
                status: r.get(12)?,
            })
        })?
        .filter(|r| r.as_ref().map_or(true, |r| r.start_s.is_finite()))
        .map(|r| {
            r.map(|mut r| {
                if !r.end_s.is_finite() {
                    r.end_s = r.start_s;
                }
                r
            })
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
