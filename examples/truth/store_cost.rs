//! The store's cost per row, alone: typical 16-token stream records (a role chunk and 16 content chunks
//! kept for `response_messages`, 16 chunk times) inserted into a fresh `benchmark_data.db`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use llmperf::record::RequestRecord;
use llmperf::store::Store;

use crate::stats::Table;

fn record(i: usize) -> RequestRecord {
    let t0 = Instant::now();
    let body: Arc<str> = Arc::from(
        r#"{"model": "truth", "messages": [{"role": "user", "content": "hello world"}], "max_tokens": 16, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true}"#,
    );
    let mut r = RequestRecord::new(i, false, body, t0);
    r.is_stream = true;
    r.success = true;
    r.status_code = Some(200);
    let head = format!(
        r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764000000,"model":"truth","choices":["#
    );
    r.keep_response(format!(r#"{head}{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#).as_bytes());
    for k in 0..16 {
        let fin = if k == 15 { r#""length""# } else { "null" };
        r.keep_response(format!(r#"{head}{{"index":0,"delta":{{"content":"hello "}},"logprobs":null,"finish_reason":{fin}}}]}}"#).as_bytes());
        r.chunk_times
            .push(t0 + Duration::from_micros(1000 + 137 * k));
    }
    r.n_decode_chunks = 16;
    r.completed_at = t0 + Duration::from_micros(3300);
    r.usage.prompt_tokens = Some(2);
    r.usage.completion_tokens = Some(16);
    r.usage.cached_tokens = Some(0);
    r
}

/// Inserts `rows` records and reports CPU µs per row.
pub fn store_cost(table: &mut Table, rows: usize, dir: &Path) {
    let records: Vec<RequestRecord> = (0..rows).map(record).collect();
    let cpu0 = llmperf::resources::process_cpu();
    let t0 = Instant::now();
    let store = Store::create(&dir.join("benchmark_data.db"), 1000).expect("store");
    for r in records {
        store.insert(r);
    }
    let written = store.finish().expect("store finish");
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (llmperf::resources::process_cpu() - cpu0).as_secs_f64();
    let bytes = std::fs::metadata(dir.join("benchmark_data.db")).map_or(0, |m| m.len());
    assert_eq!(written as usize, rows);
    table.add(
        &rows.to_string(),
        vec![
            cpu * 1e6 / rows as f64,
            rows as f64 / wall,
            bytes as f64 / rows as f64,
        ],
    );
}

pub fn store_table() -> Table {
    Table::new(
        "Store cost alone: 16-token stream rows (17 kept payloads each) into benchmark_data.db",
        &["rows", "CPU µs/row", "rows/s", "bytes/row"],
        &[1, 0, 0],
    )
}
