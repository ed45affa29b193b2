//! The per-model and per-endpoint tables of a run (`--lora-modules`, `--url-strategy`, or a replayed trace
//! naming several models): requests, failures and the mean latency and TTFT of the successes per body
//! `model` and per `endpoint` column value, read from the run's database. Shown only when a run has more than
//! one model, or any endpoint (the table itself: `sections::breakdown_table`).

use rusqlite::Connection;

/// One group: `(name, requests, failures, mean latency s, mean TTFT ms)` (means over the successes).
pub type Group = (String, u64, u64, Option<f64>, Option<f64>);

/// The groups of `con`'s rows by `key` (an SQL expression), most requests first.
fn groups(con: &Connection, key: &str, filter: &str) -> Vec<Group> {
    let query = format!(
        "SELECT {key} AS k, COUNT(*), SUM(success = 0), AVG(CASE WHEN success = 1 THEN latency END), \
         AVG(CASE WHEN success = 1 THEN first_chunk_latency END) FROM result {filter} \
         GROUP BY k ORDER BY COUNT(*) DESC, k"
    );
    // A database written before the `endpoint` column existed has no endpoints to show.
    let Ok(mut stmt) = con.prepare(&query) else {
        return Vec::new();
    };
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            r.get::<_, i64>(1)?.max(0) as u64,
            r.get::<_, Option<i64>>(2)?.unwrap_or(0).max(0) as u64,
            r.get::<_, Option<f64>>(3)?,
            r.get::<_, Option<f64>>(4)?.map(|s| s * 1000.0),
        ))
    });
    rows.map(|rows| rows.flatten().collect())
        .unwrap_or_default()
}

/// Per body `model`, when the run's bodies name more than one.
pub fn by_model(con: &Connection) -> Vec<Group> {
    let g = groups(con, "json_extract(request, '$.model')", "");
    if g.len() > 1 {
        g
    } else {
        Vec::new()
    }
}

/// Per endpoint (`--url-strategy` runs only).
pub fn by_endpoint(con: &Connection) -> Vec<Group> {
    groups(con, "endpoint", "WHERE endpoint IS NOT NULL")
}
