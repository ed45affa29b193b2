//! API plugins: how a request body is built and how one response event is read.

pub mod embedding;
mod event_scan;
pub mod openai;
pub mod openai_event;
pub mod reply_text;
pub mod responses;
mod stream_scan;
pub mod usage_fallback;

pub use stream_scan::StreamScan;

use std::time::Instant;

use crate::plan::ApiKind;
use crate::record::RequestRecord;

/// Applies one SSE event that arrived at `at` to `record`, by `api`'s rules; `scan` is the stream's own
/// (one per response, from its first event on).
pub fn apply_stream_event(
    api: ApiKind,
    record: &mut RequestRecord,
    payload: &[u8],
    at: Instant,
    scan: &mut StreamScan,
) {
    match api {
        ApiKind::Responses => responses::apply_stream_event(record, payload, at),
        _ => openai_event::apply_stream_event_scanned(record, payload, at, scan),
    }
}

/// Applies a whole non-stream body to `record`, by `api`'s rules; `false` when it was not JSON.
pub fn apply_body(api: ApiKind, record: &mut RequestRecord, body: &[u8]) -> bool {
    match api {
        ApiKind::Responses => responses::apply_body(record, body),
        _ => openai_event::apply_body(record, body),
    }
}
