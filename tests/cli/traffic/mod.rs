//! Realistic traffic mixes through the CLI (issue 29): request id headers, the dry run, model and LoRA
//! adapter mixes, several endpoints. The simulator's request log (`--mock-request-log`) is what the
//! server saw: each request's port, `model` and id header.

mod dry_run;
mod endpoints;
mod lora;
mod request_ids;

use std::path::Path;

use serde_json::Value;

/// The lines of a simulator request log.
pub fn request_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `SELECT <column> FROM result` of a run database, in insertion order.
pub fn column(db: &Path, column: &str) -> Vec<Option<String>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(&format!("SELECT {column} FROM result ORDER BY rowid"))
        .unwrap();
    let values = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    values
}
