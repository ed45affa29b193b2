//! Request ids (`X-Request-Id` by default, `--request-id-header`): `<process nonce>-<n>`, the nonce 48
//! random bits drawn once per process and `n` counting every request the process sends (1, 2, …), across
//! the runs of a sweep. Shards are processes of their own, so ids are unique across shards, sweeps and
//! repeated invocations without any coordination. A request that already has an id (a replayed trace's
//! `request_id`, an AgentX call) sends that one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::record::RequestRecord;

static NONCE: OnceLock<u64> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A fresh id, unique to this process and request.
pub fn next() -> Arc<str> {
    let nonce = *NONCE.get_or_init(|| rand::random::<u64>() & 0xFFFF_FFFF_FFFF);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Arc::from(format!("{nonce:012x}-{n}"))
}

/// Whether `id` can go in a header value (visible ASCII and spaces, not empty).
fn sendable(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
}

/// Whether the header lines `lines` (`Name: value\r\n` each) already set `name`.
fn sets(lines: &str, name: &str) -> bool {
    lines.split("\r\n").any(|line| {
        line.split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(name))
    })
}

/// Gives `record` its id (unless it has one) and adds the header line `name: id` to its extra header lines;
/// nothing when they set `name` already (so calling it twice sends one header) or the id cannot be sent.
pub fn stamp(record: &mut RequestRecord, name: &str) {
    let extra = record.extra_headers.as_deref().unwrap_or("");
    if sets(extra, name) {
        return;
    }
    let id = record.request_id.get_or_insert_with(next);
    if !sendable(id) {
        return;
    }
    record.extra_headers = Some(Arc::from(format!("{extra}{name}: {id}\r\n")));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn record() -> RequestRecord {
        RequestRecord::new(0, false, Arc::from("{}"), Instant::now())
    }

    #[test]
    fn ids_are_unique_and_stamped_once() {
        let ids: std::collections::HashSet<Arc<str>> = (0..1000).map(|_| next()).collect();
        assert_eq!(ids.len(), 1000);
        let mut r = record();
        r.extra_headers = Some(Arc::from("X-Session: s\r\n"));
        stamp(&mut r, "X-Request-Id");
        stamp(&mut r, "X-Request-Id");
        let id = r.request_id.clone().unwrap();
        assert_eq!(
            r.extra_headers.as_deref(),
            Some(format!("X-Session: s\r\nX-Request-Id: {id}\r\n").as_str())
        );
        // A trace's own id is sent as it is; one that cannot be a header value is stored but not sent.
        let mut r = record();
        r.request_id = Some(Arc::from("req-7"));
        stamp(&mut r, "X-Id");
        assert_eq!(r.extra_headers.as_deref(), Some("X-Id: req-7\r\n"));
        let mut r = record();
        r.request_id = Some(Arc::from("a\nb"));
        stamp(&mut r, "X-Id");
        assert_eq!(r.extra_headers, None);
        // A header the record sets already (a trace's own headers) is not sent twice.
        let mut r = record();
        r.extra_headers = Some(Arc::from("x-request-id: mine\r\n"));
        stamp(&mut r, "X-Request-Id");
        assert_eq!(r.extra_headers.as_deref(), Some("x-request-id: mine\r\n"));
    }
}
