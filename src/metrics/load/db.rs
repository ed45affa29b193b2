//! The load verdict's and the plateau's inputs streamed out of a run's database, with memory that does not
//! grow with the run: counts and extremes as SQL aggregates, the in-flight figures as one ordered pass over
//! the send and end events ([`super::sweep`]; SQLite's sorter spills to temporary files), the plateau's
//! throughputs as sums and its statistics as ordered column scans ([`crate::metrics::sql_stats`]).
//! Each function equals its in-memory counterpart over [`super::read_rows`]'s rows (the tests check so).

use rusqlite::{params, Connection};

use super::facts::{LoadFacts, Wanted};
use super::plateau::Window;
use super::sweep::{events_of, merge, InFlight, Sweep};
use super::window::Span;
use crate::metrics::sql_stats::column_stats;

/// A stored row's end as the verdict reads it: its completion, or its send when it has none.
const END: &str = "COALESCE(completed_time, start_time)";

/// The facts of the rows in `conn`'s `result` table, `warmup_spans` counted in flight.
pub fn facts(
    conn: &Connection,
    warmup_spans: &[Span],
    wanted: &Wanted,
) -> rusqlite::Result<LoadFacts> {
    let sql = format!(
        "SELECT COUNT(*), MIN(start_time), MAX(start_time), MAX({END}), \
         COALESCE(SUM(failure_kind = 'connect'), 0), \
         COALESCE(SUM(status_code IS NULL AND failure_kind IN ('reset', 'disconnect')), 0), \
         COUNT(scheduled_time), MIN(scheduled_time), MAX(scheduled_time) \
         FROM result WHERE start_time IS NOT NULL"
    );
    let (n, first, last, last_end, unreachable, dropped, sched) =
        conn.query_row(&sql, [], |r| {
            Ok((
                r.get::<_, i64>(0)? as usize,
                r.get::<_, Option<f64>>(1)?.unwrap_or(f64::INFINITY),
                r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NEG_INFINITY),
                r.get::<_, Option<f64>>(3)?.unwrap_or(f64::NEG_INFINITY),
                r.get::<_, i64>(4)? as usize,
                r.get::<_, i64>(5)? as usize,
                (
                    r.get::<_, i64>(6)? as usize,
                    r.get::<_, Option<f64>>(7)?.unwrap_or(f64::INFINITY),
                    r.get::<_, Option<f64>>(8)?.unwrap_or(f64::NEG_INFINITY),
                ),
            ))
        })?;
    let window = (first, last);
    Ok(LoadFacts {
        n,
        first_send_s: first,
        last_send_s: last,
        last_end_s: last_end,
        unreachable,
        dropped,
        scheduled: sched,
        requests: in_flight(conn, false, warmup_spans, window, &wanted.request_levels)?,
        conversations: match &wanted.conversation_levels {
            Some(levels) => Some(in_flight(conn, true, warmup_spans, window, levels)?),
            None => None,
        },
    })
}

/// One ordered pass over the send and end events of each request (or, `conversations`, each
/// conversation: its first send to its last end) merged with the warmup's.
fn in_flight(
    conn: &Connection,
    conversations: bool,
    warmup_spans: &[Span],
    window: Span,
    levels: &[f64],
) -> rusqlite::Result<InFlight> {
    let spans = if conversations {
        format!(
            "WITH r AS (SELECT start_time AS a, {END} AS b, conversation_id AS c FROM result \
             WHERE start_time IS NOT NULL), \
             s AS (SELECT a, b FROM r WHERE c IS NULL \
             UNION ALL SELECT MIN(a), MAX(b) FROM r WHERE c IS NOT NULL GROUP BY c)"
        )
    } else {
        format!("WITH s AS (SELECT start_time AS a, {END} AS b FROM result WHERE start_time IS NOT NULL)")
    };
    // An end never before its send; ends before sends at the same time.
    let sql = format!(
        "{spans} SELECT t, d FROM (SELECT a AS t, 1 AS d FROM s UNION ALL SELECT MAX(b, a), -1 FROM s) \
         ORDER BY t, d"
    );
    let mut stmt = conn.prepare(&sql)?;
    let stored = stmt.query_map([], |r| Ok((r.get::<_, f64>(0)?, r.get::<_, i64>(1)?)))?;
    let mut sweep = Sweep::new(window, levels);
    for event in merge(stored, events_of(warmup_spans).into_iter()) {
        let (t, d) = event?;
        sweep.event(t, d);
    }
    Ok(sweep.finish())
}

/// The plateau's figures over `window` `[a, b]`: successful requests completed in it and their tokens,
/// and the TTFT, TPOT and latency statistics of the successful requests sent in it (as
/// [`super::plateau`] computes them in memory).
pub fn plateau_window(conn: &Connection, (a, b): Span) -> rusqlite::Result<Window> {
    let ok = "COALESCE(success, 0) != 0";
    let tokens = |c: &str| format!("SUM(MAX(COALESCE({c}, 0), 0))");
    let (requests, output, prompt) = conn.query_row(
        &format!(
            "SELECT COUNT(*), COALESCE({}, 0), COALESCE({}, 0) FROM result \
             WHERE start_time IS NOT NULL AND {ok} AND {END} >= ?1 AND {END} <= ?2",
            tokens("completion_tokens"),
            tokens("prompt_tokens")
        ),
        params![a, b],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        },
    )?;
    let sent = format!("start_time IS NOT NULL AND {ok} AND start_time >= ?1 AND start_time <= ?2");
    let any_stream: bool = conn.query_row(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM result WHERE {sent} AND COALESCE(is_stream, 0) != 0)"
        ),
        params![a, b],
        |r| r.get(0),
    )?;
    let timed = if any_stream {
        format!("{sent} AND COALESCE(is_stream, 0) != 0")
    } else {
        sent.clone()
    };
    let tpot_rows = if any_stream {
        format!("{timed} AND COALESCE(completion_tokens, 0) > 1")
    } else {
        timed.clone()
    };
    let stats = |expr: &str, filter: &str| -> rusqlite::Result<Option<[f64; 3]>> {
        let s = column_stats(conn, expr, filter, &[&a, &b], &[50, 99])?;
        Ok(s.map(|s| [s.mean, s.percentiles[0], s.percentiles[1]]))
    };
    Ok(Window {
        requests: requests as u64,
        output_tokens: output as u64,
        prompt_tokens: prompt as u64,
        ttft: stats("first_chunk_latency", &timed)?,
        tpot: stats("time_per_output_token", &tpot_rows)?,
        latency: stats("latency", &sent)?,
    })
}
