//! The per-turn TTFT chart of a `--multi-turn` run: mean and max time to first token of the successful
//! requests at each turn of their conversation (turn 1 on the left), read from the run's
//! `conversation_id` / `turn_index` columns. A falling line is the prefix cache at work.

use rusqlite::Connection;

use super::svg::{sweep_chart, Series};

/// Per turn (from 1): `(turn, mean TTFT ms, max TTFT ms, requests)`; empty for single-turn runs.
pub fn turn_ttft(con: &Connection) -> Vec<(u32, f64, f64, u64)> {
    let query = "SELECT turn_index, AVG(first_chunk_latency), MAX(first_chunk_latency), COUNT(*) \
                 FROM result WHERE success = 1 AND turn_index IS NOT NULL \
                 GROUP BY turn_index ORDER BY turn_index";
    // A database written before these columns existed has no turns to show.
    let Ok(mut stmt) = con.prepare(query) else {
        return Vec::new();
    };
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)? as u32 + 1,
            r.get::<_, f64>(1)? * 1000.0,
            r.get::<_, f64>(2)? * 1000.0,
            r.get::<_, i64>(3)? as u64,
        ))
    });
    rows.map(|rows| rows.flatten().collect())
        .unwrap_or_default()
}

/// The chart's SVG, `None` when the run has no turns.
pub fn turn_ttft_chart(id: &str, turns: &[(u32, f64, f64, u64)]) -> Option<String> {
    if turns.is_empty() {
        return None;
    }
    let xs: Vec<String> = turns.iter().map(|t| t.0.to_string()).collect();
    let series = [
        Series {
            name: "mean TTFT",
            values: turns.iter().map(|t| Some(t.1)).collect(),
        },
        Series {
            name: "max TTFT",
            values: turns.iter().map(|t| Some(t.2)).collect(),
        },
    ];
    Some(sweep_chart(
        id,
        "TTFT per turn",
        "turn",
        "TTFT (ms)",
        &xs,
        &series,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_grouped_from_the_rows() {
        let con = Connection::open_in_memory().unwrap();
        con.execute_batch(
            "CREATE TABLE result(success INTEGER, first_chunk_latency REAL, turn_index INTEGER);
             INSERT INTO result VALUES (1, 0.2, 0), (1, 0.4, 0), (1, 0.05, 1), (0, NULL, 1), (1, 0.1, NULL);",
        )
        .unwrap();
        let t = turn_ttft(&con);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].0, t[0].3), (1, 2));
        assert!((t[0].1 - 300.0).abs() < 1e-9 && (t[0].2 - 400.0).abs() < 1e-9);
        assert_eq!((t[1].0, t[1].3), (2, 1));
        let svg = turn_ttft_chart("x", &t).unwrap();
        assert!(svg.contains("TTFT per turn") && svg.contains("mean TTFT"));
        let old = Connection::open_in_memory().unwrap();
        old.execute_batch("CREATE TABLE result(success INTEGER, first_chunk_latency REAL);")
            .unwrap();
        assert!(turn_ttft(&old).is_empty());
        assert!(turn_ttft_chart("x", &[]).is_none());
    }
}
