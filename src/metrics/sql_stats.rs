//! The mean and evalscope's nearest-rank percentiles of one column of a run's database, computed by
//! streaming the column's values in ascending order out of SQLite (whose sorter spills to temporary
//! files), so a summary over millions of stored rows holds a few values in memory, not every row.
//!
//! The result equals the in-memory computation bit for bit: the values are summed in the same ascending
//! order, and each percentile is the value at [`nearest_rank`]'s index of the same sorted sequence.
//!
//! [`nearest_rank`]: super::nearest_rank::nearest_rank

use std::path::Path;

use anyhow::Context;
use rusqlite::{Connection, OpenFlags, ToSql};

/// The run database at `db`, opened read-only.
pub fn open_read_only(db: &Path) -> anyhow::Result<Connection> {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", db.display()))
}

/// The run database at `db`, read-only, for sorted scans over all its rows with little memory: attached to
/// an empty in-memory database, whose 4 KiB pages size SQLite's sorter. A sorter keeps at least 250 pages
/// of the *main* database's page size in memory before it spills to a temporary file, and a run database
/// has 64 KiB pages (16 MiB held by every sort); with this main database a sort holds ~1 MiB. Unqualified
/// `result` names the attached run's table.
pub fn open_for_scans(db: &Path) -> anyhow::Result<Connection> {
    if !db.is_file() {
        anyhow::bail!("opening {}: no such file", db.display());
    }
    let Some(uri) = file_uri(db) else {
        // A path that is not UTF-8: the run database itself (its sorts hold more).
        return open_read_only(db);
    };
    let conn = Connection::open_in_memory()?;
    conn.execute("ATTACH DATABASE ?1 AS run", [format!("{uri}?mode=ro")])
        .with_context(|| format!("opening {}", db.display()))?;
    // Scans read each page once: 1 MiB of page cache for the run (16 of its pages), and the sorter spills
    // past its floor of 250 main-database pages (1 MiB) rather than the default 2 MiB cache.
    conn.execute_batch("PRAGMA main.cache_size = -1024; PRAGMA run.cache_size = -1024;")?;
    Ok(conn)
}

/// `db` as an SQLite `file:` URI (absolute, percent-encoded); `None` when the path is not UTF-8.
fn file_uri(db: &Path) -> Option<String> {
    let abs = std::path::absolute(db).ok()?;
    let mut uri = String::from("file:");
    for b in abs.to_str()?.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    Some(uri)
}

/// The mean and percentiles of a column's finite values.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// How many finite values.
    pub n: u64,
    /// Their mean (summed in ascending order).
    pub mean: f64,
    /// The nearest-rank value of each asked percentile, in the order asked.
    pub percentiles: Vec<f64>,
}

/// The index (0-based) of percentile `p` among `n` ascending values: evalscope's nearest rank.
fn rank_index(n: u64, p: u32) -> u64 {
    if p >= 100 {
        return n - 1;
    }
    (n * u64::from(p)).div_ceil(100).saturating_sub(1)
}

/// The statistics of `expr` over the rows of table `result` matching `filter` (an SQL condition over
/// its columns, with `params`); `None` when no row has a finite value. `expr` and `filter` are this
/// crate's own SQL, never user input.
pub fn column_stats(
    conn: &Connection,
    expr: &str,
    filter: &str,
    params: &[&dyn ToSql],
    percentiles: &[u32],
) -> rusqlite::Result<Option<ColumnStats>> {
    // `x - x = 0` is false for ±inf (inf − inf is NaN, which SQLite reads as NULL) and for NULL: only
    // finite values, as the in-memory statistics keep.
    let finite = format!("({filter}) AND ({expr}) - ({expr}) = 0");
    let n: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM result WHERE {finite}"),
        params,
        |r| r.get(0),
    )?;
    if n <= 0 {
        return Ok(None);
    }
    let n = n as u64;
    let ranks: Vec<u64> = percentiles.iter().map(|p| rank_index(n, *p)).collect();
    let mut found = vec![f64::NAN; ranks.len()];
    let mut stmt = conn.prepare(&format!(
        "SELECT {expr} FROM result WHERE {finite} ORDER BY 1"
    ))?;
    let mut rows = stmt.query(params)?;
    let (mut sum, mut i) = (0.0, 0u64);
    while let Some(row) = rows.next()? {
        let v: f64 = row.get(0)?;
        sum += v;
        for (slot, rank) in found.iter_mut().zip(&ranks) {
            if *rank == i {
                *slot = v;
            }
        }
        i += 1;
    }
    // Rows written between the two statements (never, for a finished run) would shift the ranks: use the
    // count actually read.
    Ok((i > 0).then(|| ColumnStats {
        n: i,
        mean: sum / i as f64,
        percentiles: found,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::nearest_rank::nearest_rank;
    use rand::{Rng, SeedableRng};

    /// A run database in a folder whose name needs escaping in a URI, read through the attached
    /// connection; a missing one is an error and is not created.
    #[test]
    fn scans_read_the_attached_database_and_never_create_one() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a b?c#d%e");
        std::fs::create_dir(&folder).unwrap();
        let db = folder.join("benchmark_data.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 65536; CREATE TABLE result (x REAL); INSERT INTO result VALUES (2.0), (1.0);",
        )
        .unwrap();
        drop(conn);
        let scans = open_for_scans(&db).unwrap();
        let s = column_stats(&scans, "x", "1", &[], &[50]).unwrap().unwrap();
        assert_eq!((s.n, s.mean, s.percentiles[0]), (2, 1.5, 1.0));
        assert!(
            scans
                .execute("INSERT INTO result VALUES (3.0)", [])
                .is_err(),
            "read-only"
        );
        let missing = folder.join("missing.db");
        assert!(open_for_scans(&missing).is_err());
        assert!(!missing.exists());
    }

    /// Random values (some NULL, some infinite) in a table `result(x)`: the streamed statistics equal
    /// the in-memory ones (sort, sum, nearest rank) exactly.
    #[test]
    fn streamed_statistics_equal_the_in_memory_ones() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for n in [1usize, 2, 3, 99, 100, 101, 1000] {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch("CREATE TABLE result (x REAL, keep INTEGER)")
                .unwrap();
            let mut kept = Vec::new();
            for _ in 0..n {
                let x: Option<f64> = match rng.random_range(0..20) {
                    0 => None,
                    1 => Some(f64::INFINITY),
                    _ => Some(rng.random_range(0.0..5.0)),
                };
                let keep = rng.random_bool(0.8);
                conn.execute(
                    "INSERT INTO result VALUES (?1, ?2)",
                    rusqlite::params![x, keep],
                )
                .unwrap();
                if keep {
                    kept.extend(x.filter(|v| v.is_finite()));
                }
            }
            let got = column_stats(&conn, "x", "keep != 0", &[], &[0, 50, 90, 99, 100]).unwrap();
            kept.sort_by(f64::total_cmp);
            if kept.is_empty() {
                assert_eq!(got, None);
                continue;
            }
            let got = got.unwrap();
            assert_eq!(got.n, kept.len() as u64);
            assert_eq!(got.mean, kept.iter().sum::<f64>() / kept.len() as f64);
            let want: Vec<f64> = [0, 50, 90, 99, 100]
                .iter()
                .map(|p| nearest_rank(&kept, *p))
                .collect();
            assert_eq!(got.percentiles, want, "n = {n}");
        }
    }
}
