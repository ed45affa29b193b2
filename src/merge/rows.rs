//! The merged database: every shard's rows on one time base (wall-clock epoch seconds: each
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
    /// The shard's database.
    pub db: &'a Path,
    /// K.
    pub index: u32,
    /// Its host.
    pub host: &'a str,
    /// Seconds added to its timestamps.
    pub offset_s: f64,
}

/// One shard's database, open for reading.
struct Source<'a> {
    shard: &'a ShardRows<'a>,
    conn: Connection,
    columns: Vec<String>,
}

fn shift_list(text: &str, offset_s: f64) -> Result<String> {
    let values: Vec<f64> = serde_json::from_str(text).context("a chunk_times list")?;
    let mut out = String::new();
    crate::pyjson::write_float_list(&mut out, values.into_iter().map(|t| t + offset_s));
    Ok(out)
}

fn open_source<'a>(shard: &'a ShardRows<'a>) -> Result<Source<'a>> {
    let conn = Connection::open_with_flags(shard.db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", shard.db.display()))?;
    let columns = conn
        .prepare("SELECT * FROM result LIMIT 0")
        .with_context(|| format!("{}: no result table", shard.db.display()))?
        .column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    Ok(Source {
        shard,
        conn,
        columns,
    })
}

impl Source<'_> {
    /// `(completed_time on the shared time base, rowid)` of every row.
    fn keys(&self) -> Result<Vec<(f64, i64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT completed_time, rowid FROM result")?;
        let keys = stmt
            .query_map([], |r| {
                Ok((r.get::<_, Option<f64>>(0)?.unwrap_or(0.0), r.get(1)?))
            })?
            .collect::<rusqlite::Result<Vec<(f64, i64)>>>()?;
        Ok(keys
            .into_iter()
            .map(|(t, id)| (t + self.shard.offset_s, id))
            .collect())
    }

    /// Row `rowid` with its timestamps shifted and the shard columns appended.
    fn row(&self, rowid: i64) -> Result<Vec<Sql>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT * FROM result WHERE rowid = ?1")?;
        let n = self.columns.len();
        let mut row: Vec<Sql> =
            stmt.query_row([rowid], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?;
        let offset = self.shard.offset_s;
        for (i, name) in self.columns.iter().enumerate() {
            match &row[i] {
                Sql::Real(t) if TIME_COLUMNS.contains(&name.as_str()) => {
                    row[i] = Sql::Real(t + offset);
                }
                Sql::Text(t) if name == "chunk_times" => row[i] = Sql::Text(shift_list(t, offset)?),
                _ => {}
            }
        }
        row.push(Sql::Integer(i64::from(self.shard.index)));
        row.push(Sql::Text(self.shard.host.to_string()));
        Ok(row)
    }
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
/// and replays them into a fresh accumulator for `ctx`. Rows are streamed one at a time in that order
/// (only their sort keys are held), so memory does not grow with the size of the responses.
pub fn merge_rows(out: &Path, shards: &[ShardRows<'_>], ctx: SummaryContext) -> Result<Replayed> {
    let sources = shards.iter().map(open_source).collect::<Result<Vec<_>>>()?;
    let first = sources.first().context("no shard to merge")?;
    for s in &sources {
        if s.columns != first.columns {
            anyhow::bail!(
                "{}: its result table has other columns than {} (another llmperf version?)",
                s.shard.db.display(),
                first.shard.db.display()
            );
        }
    }
    let create_sql: String = first.conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'result'",
        [],
        |r| r.get(0),
    )?;
    let mut order: Vec<(f64, usize, i64)> = Vec::new();
    for (k, s) in sources.iter().enumerate() {
        order.extend(s.keys()?.into_iter().map(|(t, id)| (t, k, id)));
    }
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

    let mut conn = Connection::open(out).with_context(|| format!("creating {}", out.display()))?;
    conn.execute_batch(&format!(
        "{create_sql};\nALTER TABLE result ADD COLUMN shard_index INTEGER;\nALTER TABLE result ADD COLUMN shard_host TEXT;"
    ))?;
    let placeholders = vec!["?"; first.columns.len() + 2].join(", ");
    let mut replay = Replay::new(&first.columns, ctx);
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare(&format!("INSERT INTO result VALUES ({placeholders})"))?;
        for &(_, k, rowid) in &order {
            let row = sources[k].row(rowid)?;
            stmt.execute(params_from_iter(row.iter()))?;
            replay.feed(&row);
        }
    }
    tx.commit()?;
    Ok(Replayed {
        acc: replay.acc,
        timeline: replay.timeline,
        rows: order.len(),
    })
}

/// Feeds merged rows to the accumulator and the workload timeline, as a run's aggregator feeds records.
struct Replay {
    acc: Accumulator,
    timeline: WorkloadTimeline,
    col: [Option<usize>; 15],
}

/// The columns [`Replay`] reads, in the order of `Replay::col`.
const REPLAY_COLUMNS: [&str; 15] = [
    "start_time",
    "completed_time",
    "success",
    "is_stream",
    "latency",
    "first_chunk_latency",
    "time_per_output_token",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "inter_token_latencies",
    "chunk_times",
    "failure_kind",
    "status_code",
    "error",
];

impl Replay {
    fn new(columns: &[String], ctx: SummaryContext) -> Replay {
        Replay {
            acc: Accumulator::new(ctx),
            timeline: WorkloadTimeline::default(),
            col: REPLAY_COLUMNS.map(|name| columns.iter().position(|c| c == name)),
        }
    }

    fn feed(&mut self, row: &[Sql]) {
        let [start, completed, success, stream, latency, ttft, tpot, prompt, completion, cached, itl, chunks, failure, status, error] =
            self.col;
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
            // Merged shards are summarised as single requests (no multi-turn keys).
            turn: None,
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
        if let Some(kind) = sample.failure {
            let status = int(row, status).and_then(|s| u16::try_from(s).ok());
            self.acc.note_failure(kind, status, text(row, error));
        }
        self.acc.add_sample(&sample, itl_s);
        if ok {
            self.timeline.feed(
                sample.start_time,
                sample.completed_time,
                sample.prompt_tokens,
                sample.completion_tokens,
                sample.cached_tokens.unwrap_or(0),
            );
        }
    }
}
