//! Joining what a client stored (the run's database) with what the simulator really did ([`TruthRecord`]),
//! request by request, so the client's own measurement error can be computed.
//!
//! The join key costs the client nothing: the simulator puts its request number in every response's `id`
//! (`chatcmpl-7`, `cmpl-7`), and the client already keeps the response payloads (`response_messages`,
//! `base64(pickle(list))`). A row whose first kept payload has no such `id` (a failure, a non-simulator
//! server) stays unmatched, and is counted as such.
//!
//! Both sides stamp the same monotonic clock ([`crate::clock`]), in-process or not, so times subtract
//! directly.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine as _;

use super::TruthRecord;

/// One stored request, as the join needs it (seconds on the monotonic clock).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRow {
    /// The simulator's request number read from the response `id`, when there is one.
    pub request_id: Option<u64>,
    /// `success`.
    pub success: bool,
    /// `scheduled_time`: when the request was meant to be sent.
    pub scheduled_s: f64,
    /// `send_time`: when it was handed to the HTTP client.
    pub send_s: f64,
    /// `chunk_times`: when each output-bearing chunk was read.
    pub chunk_times_s: Vec<f64>,
}

impl ClientRow {
    /// The client's TTFT: first output chunk − send time.
    pub fn ttft_s(&self) -> Option<f64> {
        self.chunk_times_s.first().map(|t| t - self.send_s)
    }

    /// Send lag: actual − intended send time.
    pub fn send_lag_s(&self) -> f64 {
        self.send_s - self.scheduled_s
    }
}

/// The request number in a simulator response id: the digits after the last `-` (`chatcmpl-7` → 7).
pub fn request_id_of(response_id: &str) -> Option<u64> {
    response_id.rsplit_once('-')?.1.parse().ok()
}

/// The `id` of the first payload kept in a `response_messages` value (`base64(pickle(list))`).
pub fn first_response_id(response_messages: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response_messages)
        .ok()?;
    let list: serde_json::Value =
        serde_pickle::from_slice(&bytes, serde_pickle::DeOptions::new()).ok()?;
    let id = list.get(0)?.get("id")?.as_str()?;
    Some(id.to_string())
}

/// Every row of `result` in `db`, in insertion order.
pub fn read_client_rows(db: &Path) -> Result<Vec<ClientRow>> {
    let conn =
        rusqlite::Connection::open(db).with_context(|| format!("opening {}", db.display()))?;
    let mut stmt = conn.prepare(
        "SELECT success, scheduled_time, send_time, chunk_times, response_messages FROM result ORDER BY rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        let chunks: Option<String> = r.get(3)?;
        let messages: Option<String> = r.get(4)?;
        Ok((
            r.get::<_, i64>(0)? == 1,
            r.get::<_, f64>(1)?,
            r.get::<_, f64>(2)?,
            chunks,
            messages,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (success, scheduled_s, send_s, chunks, messages) = row?;
        let chunk_times_s: Vec<f64> = match chunks {
            Some(text) => serde_json::from_str(&text).context("chunk_times is not a JSON list")?,
            None => Vec::new(),
        };
        let request_id = messages
            .as_deref()
            .and_then(first_response_id)
            .and_then(|id| request_id_of(&id));
        out.push(ClientRow {
            request_id,
            success,
            scheduled_s,
            send_s,
            chunk_times_s,
        });
    }
    Ok(out)
}

/// The outcome of a join.
#[derive(Debug, Clone, Default)]
pub struct Joined {
    /// Rows matched to exactly one truth record.
    pub pairs: Vec<(ClientRow, TruthRecord)>,
    /// Rows without a usable id, or whose id the truth does not hold (or holds twice).
    pub unmatched_rows: usize,
    /// Truth records no row claimed (warmup and connection-test requests, which are not stored, land here).
    pub unmatched_truth: usize,
}

/// Pairs each row with the truth record of the same request number.
pub fn join(rows: Vec<ClientRow>, truth: &[TruthRecord]) -> Joined {
    let mut by_id: HashMap<u64, Option<&TruthRecord>> = HashMap::with_capacity(truth.len());
    for t in truth {
        by_id
            .entry(t.request_id)
            .and_modify(|slot| *slot = None)
            .or_insert(Some(t));
    }
    let mut joined = Joined::default();
    let mut claimed = 0;
    for row in rows {
        match row.request_id.and_then(|id| by_id.get_mut(&id)) {
            Some(slot @ Some(_)) => {
                let t = slot.take().expect("matched above");
                joined.pairs.push((row, t.clone()));
                claimed += 1;
            }
            _ => joined.unmatched_rows += 1,
        }
    }
    joined.unmatched_truth = truth.len() - claimed;
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth(id: u64) -> TruthRecord {
        TruthRecord {
            received_s: 1.0,
            arrived_s: None,
            first_token_s: Some(1.05),
            last_token_s: Some(1.05),
            prompt_tokens: 1,
            completion_tokens: 1,
            path: "/v1/chat/completions".into(),
            stream: true,
            request_id: id,
            chunk_times_s: vec![1.05],
            first_answer_s: None,
            reasoning_tokens: 0,
            structured: None,
        }
    }

    fn row(id: Option<u64>) -> ClientRow {
        ClientRow {
            request_id: id,
            success: true,
            scheduled_s: 0.999,
            send_s: 0.9995,
            chunk_times_s: vec![1.0502],
        }
    }

    #[test]
    fn ids_are_read_from_response_ids() {
        assert_eq!(request_id_of("chatcmpl-42"), Some(42));
        assert_eq!(request_id_of("cmpl-7"), Some(7));
        assert_eq!(request_id_of("chatcmpl-abc"), None);
        assert_eq!(request_id_of("nodash"), None);
    }

    #[test]
    fn join_counts_matches_and_leftovers() {
        let j = join(
            vec![row(Some(2)), row(Some(9)), row(None), row(Some(2))],
            &[truth(1), truth(2), truth(3)],
        );
        assert_eq!(j.pairs.len(), 1);
        assert_eq!(j.pairs[0].1.request_id, 2);
        assert_eq!(j.unmatched_rows, 3);
        assert_eq!(j.unmatched_truth, 2);
        let r = &j.pairs[0].0;
        assert!((r.ttft_s().unwrap() - 0.0507).abs() < 1e-9);
        assert!((r.send_lag_s() - 0.0005).abs() < 1e-9);
    }
}
