//! The merged `benchmark_data.db`: every shard's rows on one time base (wall-clock epoch seconds: each
//! shard's monotonic stamps plus its recorded `CLOCK_REALTIME − CLOCK_MONOTONIC`), in completion order,
//! with `shard_index` and `shard_host` appended after the shard's columns; and the replay of those rows
//! through the same accumulator and workload timeline a run uses.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OpenFlags};

use crate::metrics::{Accumulator, Sample, SummaryContext, WorkloadTimeline};
use crate::record::FailureKind;

/// Columns holding one timestamp each.
const TIME_COLUMNS: [&str; 4] = [
    "start_time",
    "completed_time",
    "scheduled_time",
    "send_time",
];

/// Every failure kind, to map a stored label back to its static label.
const FAILURE_KINDS: [FailureKind; 10] = [
    FailureKind::HttpStatus,
    FailureKind::Connect,
    FailureKind::Timeout,
    FailureKind::ReadTimeout,
    FailureKind::InBandError,
    FailureKind::Disconnect,
    FailureKind::Reset,
    FailureKind::Malformed,
    FailureKind::BadResponse,
    FailureKind::Cancelled,
];

/// One shard's contribution to a run.
pub struct ShardRows<'a> {
    /// The shard's `benchmark_data.db`.
    pub db: &'a Path,
    /// K.
    pub index: u32,
    /// Its host.
    pub host: &'a str,
    /// Seconds added to its timestamps.
    pub offset_s: f64,
}

/// The rows of one shard, read whole, with their timestamps shifted.
struct Table {
    columns: Vec<String>,
    create_sql: String,
    rows: Vec<Vec<Sql>>,
}

fn shift_list(text: &str, offset_s: f64) -> Result<String> {
    let values: Vec<f64> = serde_json::from_str(text).context("a chunk_times list")?;
    let mut out = String::new();
    crate::pyjson::write_float_list(&mut out, values.into_iter().map(|t| t + offset_s));
    Ok(out)
}

fn read_table(shard: &ShardRows<'_>) -> Result<Table> {
    let conn = Connection::open_with_flags(shard.db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", shard.db.display()))?;
    let create_sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'result'",
            [],
            |r| r.get(0),
        )
        .with_context(|| format!("{}: no result table", shard.db.display()))?;
    let mut stmt = conn.prepare("SELECT * FROM result ORDER BY rowid")?;
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let times: Vec<usize> = (0..columns.len())
        .filter(|&i| TIME_COLUMNS.contains(&columns[i].as_str()))
        .collect();
    let chunks = columns.iter().position(|c| c == "chunk_times");
    let mut rows = Vec::new();
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        let mut row: Vec<Sql> = (0..columns.len())
            .map(|i| r.get::<_, Sql>(i))
            .collect::<rusqlite::Result<_>>()?;
        for &i in &times {
            if let Sql::Real(t) = row[i] {
                row[i] = Sql::Real(t + shard.offset_s);
            }
        }
        if let Some(i) = chunks {
            if let Sql::Text(t) = &row[i] {
                row[i] = Sql::Text(shift_list(t, shard.offset_s)?);
            }
        }
        row.push(Sql::Integer(i64::from(shard.index)));
        row.push(Sql::Text(shard.host.to_string()));
        rows.push(row);
    }
    Ok(Table {
        columns,
        create_sql,
        rows,
    })
}

fn real(row: &[Sql], i: Option<usize>) -> f64 {
    match i.map(|i| &row[i]) {
        Some(Sql::Real(v)) => *v,
        Some(Sql::Integer(v)) => *v as f64,
        _ => 0.0,
    }
}

fn int(row: &[Sql], i: Option<usize>) -> Option<i64> {
    match i.map(|i| &row[i]) {
        Some(Sql::Integer(v)) => Some(*v),
        _ => None,
    }
}

fn text(row: &[Sql], i: Option<usize>) -> Option<&str> {
    match i.map(|i| &row[i]) {
        Some(Sql::Text(t)) => Some(t.as_str()),
        _ => None,
    }
}

/// What the merged rows add up to.
pub struct Replayed {
    /// The accumulator fed with every row, in completion order.
    pub acc: Accumulator,
    /// The workload timeline fed with every successful row.
    pub timeline: WorkloadTimeline,
    /// Rows written.
    pub rows: usize,
}

/// Writes the union of `shards`' rows to a new database `out` (completion order on the shared time base)
/// and replays them into a fresh accumulator for `ctx`.
pub fn merge_rows(out: &Path, shards: &[ShardRows<'_>], ctx: SummaryContext) -> Result<Replayed> {
    let mut tables = Vec::new();
    for s in shards {
        tables.push(read_table(s)?);
    }
    let first = tables.first().context("no shard to merge")?;
    let columns = first.columns.clone();
    let create_sql = first.create_sql.clone();
    for (t, s) in tables.iter().zip(shards) {
        if t.columns != columns {
            anyhow::bail!(
                "{}: its result table has other columns than the first shard's (another llmperf version?)",
                s.db.display()
            );
        }
    }
    let col = |name: &str| columns.iter().position(|c| c == name);
    let completed = col("completed_time");
    let mut rows: Vec<Vec<Sql>> = tables.iter_mut().flat_map(|t| t.rows.drain(..)).collect();
    rows.sort_by(|a, b| real(a, completed).total_cmp(&real(b, completed)));

    let mut conn = Connection::open(out).with_context(|| format!("creating {}", out.display()))?;
    conn.execute_batch(&format!(
        "{};\nALTER TABLE result ADD COLUMN shard_index INTEGER;\nALTER TABLE result ADD COLUMN shard_host TEXT;",
        create_sql
    ))?;
    let placeholders = vec!["?"; columns.len() + 2].join(", ");
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare(&format!("INSERT INTO result VALUES ({placeholders})"))?;
        for row in &rows {
            stmt.execute(params_from_iter(row.iter()))?;
        }
    }
    tx.commit()?;

    let mut acc = Accumulator::new(ctx);
    let mut timeline = WorkloadTimeline::default();
    let c = |n: &str| col(n);
    let (start, success, stream) = (c("start_time"), c("success"), c("is_stream"));
    let (latency, ttft, tpot) = (
        c("latency"),
        c("first_chunk_latency"),
        c("time_per_output_token"),
    );
    let (prompt, completion, cached) = (
        c("prompt_tokens"),
        c("completion_tokens"),
        c("cached_tokens"),
    );
    let (itl, chunks, failure) = (
        c("inter_token_latencies"),
        c("chunk_times"),
        c("failure_kind"),
    );
    for row in &rows {
        let ok = int(row, success) == Some(1);
        let tokens = |i| int(row, i).unwrap_or(0).max(0) as u64;
        let n_chunks = text(row, chunks)
            .and_then(|t| serde_json::from_str::<Vec<f64>>(t).ok())
            .map_or(0, |v| v.len() as u32);
        let sample = Sample {
            start_time: real(row, start),
            completed_time: real(row, completed),
            success: ok,
            is_stream: int(row, stream) == Some(1),
            latency: real(row, latency),
            ttft: real(row, ttft),
            tpot: real(row, tpot),
            prompt_tokens: tokens(prompt),
            completion_tokens: tokens(completion),
            cached_tokens: int(row, cached).map(|v| v.max(0) as u64),
            n_decode_chunks: n_chunks,
            failure: (!ok).then(|| {
                let label = text(row, failure).unwrap_or("unknown");
                FAILURE_KINDS
                    .iter()
                    .map(|k| k.label())
                    .find(|l| *l == label)
                    .unwrap_or("unknown")
            }),
        };
        let itl_s: Vec<f64> = text(row, itl)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        acc.add_sample(&sample, itl_s);
        if ok {
            timeline.feed(
                sample.start_time,
                sample.completed_time,
                sample.prompt_tokens,
                sample.completion_tokens,
                sample.cached_tokens.unwrap_or(0),
            );
        }
    }
    Ok(Replayed {
        acc,
        timeline,
        rows: rows.len(),
    })
}
