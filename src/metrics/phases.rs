//! The connection phases of a run's stored requests, summarised (docs/phases.md): `New Connections` and
//! the mean and p99 (evalscope's nearest rank) of each `phase_*` column over the rows where it is not NULL,
//! in milliseconds. Read from the run's database, so a merged run is summarised over the union of its
//! shards' rows exactly as a single run.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::nearest_rank::nearest_rank;
use super::sql_stats::{column_stats, open_for_scans, open_read_only};
use crate::pyjson;
use crate::record::phases::{Phases, PHASE_NAMES};

/// One phase over a run: how many requests had it, its mean and p99 in ms (`round(x, 4)`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseStat {
    /// The phase's name in the summary keys (`Connect`).
    pub label: &'static str,
    /// Requests with the phase measured.
    pub n: u64,
    /// `Phase <label> Mean (ms)`.
    pub mean_ms: f64,
    /// `Phase <label> P99 (ms)`.
    pub p99_ms: f64,
}

/// The phases of a run. Serialised as `New Connections`, then `Phase <label> Mean (ms)` and
/// `Phase <label> P99 (ms)` for each phase some request had, in phase order; a phase no request had
/// (`TLS` over plain `http://`, the connection phases of a run that only reused connections) has no keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseSummary {
    /// Requests that opened their connection (those with `phase_connect`).
    pub new_connections: u64,
    /// The phases some request had, in phase order.
    pub stats: Vec<PhaseStat>,
}

impl PhaseSummary {
    /// The summary over `rows` (`None` when no row has any phase: a database from before the phases, or
    /// a run whose every request failed before connecting).
    pub fn of(rows: &[Phases]) -> Option<PhaseSummary> {
        let mut stats = Vec::new();
        for (i, (_, label)) in PHASE_NAMES.iter().enumerate() {
            let mut v: Vec<f64> = rows
                .iter()
                .filter_map(|p| p.values()[i])
                .filter(|v| v.is_finite())
                .collect();
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            stats.push(PhaseStat {
                label,
                n: v.len() as u64,
                mean_ms: pyjson::round(mean * 1e3, 4),
                p99_ms: pyjson::round(nearest_rank(&v, 99) * 1e3, 4),
            });
        }
        if stats.is_empty() {
            return None;
        }
        Some(PhaseSummary {
            new_connections: rows.iter().filter(|p| p.new_connection()).count() as u64,
            stats,
        })
    }

    /// The stat of phase `label`, if some request had it.
    pub fn stat(&self, label: &str) -> Option<&PhaseStat> {
        self.stats.iter().find(|s| s.label == label)
    }
}

impl Serialize for PhaseSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1 + 2 * self.stats.len()))?;
        map.serialize_entry("New Connections", &self.new_connections)?;
        for stat in &self.stats {
            map.serialize_entry(&format!("Phase {} Mean (ms)", stat.label), &stat.mean_ms)?;
            map.serialize_entry(&format!("Phase {} P99 (ms)", stat.label), &stat.p99_ms)?;
        }
        map.end()
    }
}

/// The phases of every row of the database at `db` (empty for a database from before the phases), in
/// memory: the reference for [`summarize_db`].
pub fn read_phases(db: &Path) -> Result<Vec<Phases>> {
    let conn = open_read_only(db)?;
    if !has_phases(&conn)? {
        return Ok(Vec::new());
    }
    let names: Vec<String> = PHASE_NAMES
        .iter()
        .map(|(n, _)| format!("phase_{n}"))
        .collect();
    let mut stmt = conn.prepare(&format!("SELECT {} FROM result", names.join(", ")))?;
    let rows = stmt
        .query_map([], |r| {
            let mut v = [None; 6];
            for (i, slot) in v.iter_mut().enumerate() {
                *slot = r.get(i)?;
            }
            Ok(Phases::from_values(v))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Whether the database's `result` table has the phase columns.
fn has_phases(conn: &Connection) -> rusqlite::Result<bool> {
    let stmt = conn.prepare("SELECT * FROM result LIMIT 0")?;
    let found = stmt.column_names().contains(&"phase_connect");
    Ok(found)
}

/// The phase summary of the rows in `conn`, each phase's statistics streamed in order out of SQLite
/// (memory does not grow with the rows): equal to [`PhaseSummary::of`] over [`read_phases`]'s rows.
pub fn summarize_db(conn: &Connection) -> rusqlite::Result<Option<PhaseSummary>> {
    if !has_phases(conn)? {
        return Ok(None);
    }
    let mut stats = Vec::new();
    for (name, label) in PHASE_NAMES.iter() {
        let column = format!("phase_{name}");
        let Some(s) = column_stats(conn, &column, "1", &[], &[99])? else {
            continue;
        };
        stats.push(PhaseStat {
            label,
            n: s.n,
            mean_ms: pyjson::round(s.mean * 1e3, 4),
            p99_ms: pyjson::round(s.percentiles[0] * 1e3, 4),
        });
    }
    if stats.is_empty() {
        return Ok(None);
    }
    let new_connections: i64 =
        conn.query_row("SELECT COUNT(phase_connect) FROM result", [], |r| r.get(0))?;
    Ok(Some(PhaseSummary {
        new_connections: new_connections as u64,
        stats,
    }))
}

/// The phase summary of the run whose database is `db` (`None`, with a warning, when it cannot be read).
pub fn summarize(db: &Path) -> Option<PhaseSummary> {
    let summary = open_for_scans(db).and_then(|conn| summarize_db(&conn).map_err(Into::into));
    match summary {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("connection phases: {e:#}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(connect: Option<f64>, tls: Option<f64>, write: f64) -> Phases {
        Phases {
            dns: connect.map(|_| 0.0001),
            connect,
            tls,
            write: Some(write),
            headers: Some(0.010),
            first_byte: Some(0.0),
        }
    }

    #[test]
    fn keys_follow_the_phase_order_and_skip_phases_no_request_had() {
        let rows = [
            row(Some(0.002), None, 0.001),
            row(None, None, 0.003),
            row(None, None, 0.002),
        ];
        let s = PhaseSummary::of(&rows).unwrap();
        assert_eq!(s.new_connections, 1);
        let json = serde_json::to_value(&s).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "New Connections");
        assert_eq!(keys[1], "Phase DNS Mean (ms)");
        assert!(!keys.iter().any(|k| k.contains("TLS")), "{keys:?}");
        assert_eq!(keys.len(), 1 + 2 * 5);
        let connect = s.stat("Connect").unwrap();
        assert_eq!((connect.n, connect.mean_ms, connect.p99_ms), (1, 2.0, 2.0));
        let write = s.stat("Write").unwrap();
        assert_eq!(write.n, 3);
        assert_eq!(write.mean_ms, 2.0);
        assert_eq!(write.p99_ms, 3.0, "nearest rank: the largest of three");
    }

    #[test]
    fn p99_is_evalscopes_nearest_rank() {
        // 200 values 1..=200 ms: p99 = ceil(198) → the 198th value.
        let rows: Vec<Phases> = (1..=200)
            .map(|i| row(None, None, f64::from(i) / 1e3))
            .collect();
        let s = PhaseSummary::of(&rows).unwrap();
        assert_eq!(s.stat("Write").unwrap().p99_ms, 198.0);
        assert_eq!(s.stat("Write").unwrap().mean_ms, 100.5);
        assert_eq!(s.new_connections, 0);
        assert!(s.stat("Connect").is_none());
    }

    #[test]
    fn no_phases_no_summary() {
        assert_eq!(PhaseSummary::of(&[]), None);
        assert_eq!(PhaseSummary::of(&[Phases::default()]), None);
    }

    /// The streamed summary over a database equals the in-memory one over its rows read back: random
    /// phases, NULL where a connection was reused, and a database from before the phases.
    #[test]
    fn the_streamed_summary_equals_the_in_memory_one() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let dir = tempfile::tempdir().unwrap();
        for case in 0..40 {
            let path = dir.path().join(format!("{case}.db"));
            let conn = crate::store::empty_for_test(&path);
            for _ in 0..rng.random_range(0..150) {
                let new = rng.random_bool(0.2);
                let mut v = |on: bool| on.then(|| rng.random_range(0.0..0.01));
                let values = [
                    v(new),
                    v(new),
                    v(new && case % 2 == 0),
                    v(true),
                    v(true),
                    v(true),
                ];
                conn.execute(
                    "INSERT INTO result (phase_dns, phase_connect, phase_tls, phase_write, phase_headers, \
                     phase_first_byte) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    rusqlite::params_from_iter(values),
                )
                .unwrap();
            }
            let want = PhaseSummary::of(&read_phases(&path).unwrap());
            assert_eq!(summarize_db(&conn).unwrap(), want, "case {case}");
            assert_eq!(summarize(&path), want, "case {case}");
        }
        let old = dir.path().join("old.db");
        Connection::open(&old)
            .unwrap()
            .execute_batch("CREATE TABLE result (start_time REAL)")
            .unwrap();
        assert_eq!(summarize(&old), None);
    }
}
