//! `speed_benchmark.json` for `--dataset speed_benchmark(_long)`: evalscope's query over the run's
//! database — per prompt length, the mean decode speed `completion_tokens / latency` and the mean GPU
//! memory, each rounded to 2 decimals by SQLite — written as a list of
//! `{"Prompt Tokens", "Speed(tokens/s)", "GPU Memory(GB)"}` objects (indent 4).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

const QUERY: &str = "SELECT prompt_tokens, ROUND(AVG(completion_tokens / latency), 2), \
     ROUND(AVG(max_gpu_memory_cost), 2) FROM result WHERE success = 1 AND latency > 0 \
     GROUP BY prompt_tokens";

/// The rows of the speed table, from the run's database.
pub fn speed_rows(db: &Path) -> Result<Vec<Map<String, Value>>> {
    let conn =
        rusqlite::Connection::open(db).with_context(|| format!("opening {}", db.display()))?;
    let mut stmt = conn.prepare(QUERY)?;
    let rows = stmt
        .query_map([], |r| {
            let mut m = Map::new();
            m.insert("Prompt Tokens".into(), json!(r.get::<_, Option<i64>>(0)?));
            m.insert("Speed(tokens/s)".into(), json!(r.get::<_, Option<f64>>(1)?));
            m.insert("GPU Memory(GB)".into(), json!(r.get::<_, Option<f64>>(2)?));
            Ok(m)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Writes `speed_benchmark.json` beside the database and returns the rows.
pub fn write(db: &Path, run_dir: &Path) -> Result<Vec<Map<String, Value>>> {
    let rows = speed_rows(db)?;
    let path = run_dir.join("speed_benchmark.json");
    std::fs::write(&path, crate::pyjson::dumps_indent4(&rows))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(rows)
}
