//! Ground truth kept by the simulator: one [`TruthRecord`] per generation request, stamped on the shared
//! monotonic clock ([`crate::clock`]) so it can be joined against the client's own stamps.
//!
//! A record is pushed once, when its response ends (fully sent, or dropped because the client went away), so
//! the lock is taken once per request, never per token. [`TruthLog::snapshot`] returns the records sorted
//! into received order.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// What the simulator really did for one request, in seconds on the monotonic clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruthRecord {
    /// When the request head had been parsed (the start of the response timeline).
    pub received_s: f64,
    /// When the request's last bytes reached the simulator's socket (kernel receive stamp), if known: the
    /// simulator's own wake-up and parsing come after it, so a true TTFT measured from here counts them as
    /// the server's, not the client's.
    #[serde(default)]
    pub arrived_s: Option<f64>,
    /// When the frame carrying the first output token was handed to the connection; for non-stream and
    /// embedding responses, when the whole body was. `None` when no token was sent.
    pub first_token_s: Option<f64>,
    /// When the frame carrying the last output token that was sent was handed to the connection.
    pub last_token_s: Option<f64>,
    /// Prompt tokens as the simulator counts them (whitespace-separated words, or token ids).
    pub prompt_tokens: u64,
    /// Output tokens actually handed to the connection (fewer than planned if the client went away).
    pub completion_tokens: u64,
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Whether the response was an SSE stream.
    pub stream: bool,
    /// The simulator's own request number (also in the response `id`, e.g. `chatcmpl-7`).
    pub request_id: u64,
    /// Stream responses: when each output-bearing chunk's frame was handed to the connection, one entry per
    /// chunk (chunks written together in one frame share a time), to compare with a client's per-chunk
    /// stamps. Empty for non-stream responses.
    #[serde(default)]
    pub chunk_times_s: Vec<f64>,
    /// When the first frame carrying an answer token (not reasoning) was handed to the connection; `None`
    /// when none was sent. Written only when reasoning was simulated (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_s: Option<f64>,
    /// Output tokens sent as `reasoning_content` (written only when non-zero).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// The tool call or JSON output sent (written only for those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<TruthStructured>,
}

/// A tool call as the simulator sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthCall {
    /// Its `id`.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// Its arguments, as far as they were sent (all of them unless `max_tokens` or the client cut them).
    pub arguments: String,
}

/// The tool call or JSON output of one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruthStructured {
    /// The call, for a request that offered tools.
    pub tool_call: Option<TruthCall>,
    /// The JSON text sent as `content`, for a request that asked for JSON.
    pub content: Option<String>,
    /// The output was made invalid on purpose (`invalid_output_rate`).
    pub invalid: bool,
    /// When the frame carrying the call's first fragment was handed to the connection.
    pub first_tool_call_s: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The in-memory log of [`TruthRecord`]s.
#[derive(Debug, Default)]
pub(crate) struct TruthLog {
    records: Mutex<Vec<TruthRecord>>,
}

impl TruthLog {
    /// Appends one record (one short lock per request).
    pub(crate) fn push(&self, record: TruthRecord) {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
    }

    /// A copy of every record so far, in received order (ties broken by request id).
    pub(crate) fn snapshot(&self) -> Vec<TruthRecord> {
        let mut out = self
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        out.sort_by(|a, b| {
            a.received_s
                .total_cmp(&b.received_s)
                .then(a.request_id.cmp(&b.request_id))
        });
        out
    }
}

/// Writes `records` to `path` as JSON Lines: one object per record, fields named as in [`TruthRecord`],
/// `null` for absent token times.
pub fn write_truth_jsonl(records: &[TruthRecord], path: &Path) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64, received_s: f64) -> TruthRecord {
        TruthRecord {
            received_s,
            arrived_s: None,
            first_token_s: Some(received_s + 0.05),
            last_token_s: None,
            prompt_tokens: 3,
            completion_tokens: 0,
            path: "/v1/completions".into(),
            stream: true,
            request_id: id,
            chunk_times_s: vec![received_s + 0.05],
            first_answer_s: None,
            reasoning_tokens: 0,
            structured: None,
        }
    }

    #[test]
    fn snapshot_is_in_received_order() {
        let log = TruthLog::default();
        log.push(rec(2, 2.0));
        log.push(rec(1, 1.0));
        log.push(rec(3, 2.0));
        let ids: Vec<u64> = log.snapshot().iter().map(|r| r.request_id).collect();
        assert_eq!(ids, [1, 2, 3]);
    }

    #[test]
    fn jsonl_has_one_object_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("truth.jsonl");
        write_truth_jsonl(&[rec(1, 1.5), rec(2, 2.5)], &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            r#"{"received_s":1.5,"arrived_s":null,"first_token_s":1.55,"last_token_s":null,"prompt_tokens":3,"completion_tokens":0,"path":"/v1/completions","stream":true,"request_id":1,"chunk_times_s":[1.55]}"#
        );
        let back: TruthRecord = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(back, rec(2, 2.5));
    }
}
