use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::record::{FailureKind, RequestRecord};

fn record(ok: bool, ttft_ms: u64, chunks: u64, tokens: u64) -> RequestRecord {
    let t0 = Instant::now();
    let mut r = RequestRecord::new(0, false, Arc::from("{}"), t0);
    r.sent_at = t0 + Duration::from_millis(2);
    r.is_stream = true;
    r.success = ok;
    r.chunk_times = (0..chunks)
        .map(|i| r.sent_at + Duration::from_millis(ttft_ms + 10 * i))
        .collect();
    r.completed_at = r.sent_at + Duration::from_millis(ttft_ms + 10 * chunks);
    r.usage.prompt_tokens = Some(7);
    r.usage.completion_tokens = Some(tokens);
    if !ok {
        r.failure = Some(FailureKind::HttpStatus);
        r.error = Some("HTTP 503\nbusy".into());
    }
    r
}

#[test]
fn a_feed_counts_records_and_in_flight_requests() {
    let board = Board::new("m".into(), None, Some(1), "m".into());
    let sent = Arc::new(AtomicU64::new(1)); // the connection test went before
    let mut feed = board.start_point(
        "parallel_2_number_3".into(),
        3,
        Target::Concurrency {
            parallel: 2,
            rate: None,
        },
        sent.clone(),
    );
    let point = board.latest().unwrap();
    assert_eq!(
        (point.desc.index, point.sent(), point.in_flight()),
        (1, 0, 0)
    );
    sent.fetch_add(4, Ordering::Relaxed);
    assert_eq!(point.in_flight(), 4);
    feed.warmup_finished();
    feed.record(&record(true, 50, 4, 4));
    feed.record(&record(false, 0, 0, 0));
    assert_eq!(point.in_flight(), 1, "received at once");
    assert_eq!(point.stats().completed, 0, "published in batches");
    feed.publish();
    let s = point.stats();
    assert_eq!((s.completed, s.succeeded, s.failed_total()), (2, 1, 1));
    assert_eq!(s.failed[FailureKind::HttpStatus.index()], 1);
    assert_eq!((s.input_tokens, s.output_tokens), (7, 4));
    assert_eq!((s.ttft.count, s.itl.count, s.latency.count), (1, 3, 1));
    assert_eq!(s.send_lag.count, 2);
    assert_eq!(
        s.latest_error,
        Some((FailureKind::HttpStatus, "HTTP 503\\nbusy".to_string()))
    );
    let recent = point.recent();
    assert_eq!(recent.itl.len(), 3);
    assert_eq!(recent.tpot.len(), 1);
    assert_eq!(point.warmup_done(), 1);
    assert!(!point.is_finished());
    feed.finish();
    assert!(point.is_finished());
}

#[test]
fn a_reader_holding_the_lock_only_postpones_a_batch() {
    let board = Board::new("m".into(), Some(2), None, "m".into());
    let mut feed = board.start_point(
        "p".into(),
        2,
        Target::Rate(5.0),
        Arc::new(AtomicU64::new(0)),
    );
    let point = feed.point().clone();
    feed.record(&record(true, 50, 2, 2));
    {
        let _reader = point.stats.lock().unwrap();
        feed.publish(); // must not wait
    }
    assert_eq!(point.stats().completed, 0);
    feed.record(&record(true, 60, 2, 2));
    feed.publish();
    assert_eq!(point.stats().completed, 2, "nothing lost");
    assert_eq!(point.stats().ttft.count, 2);
    let second = board.start_point("q".into(), 1, Target::Trace, Arc::new(AtomicU64::new(0)));
    assert_eq!(second.point().desc.index, 2);
    assert_eq!(board.points().len(), 2);
    assert!(!board.is_finished());
    board.finish();
    assert!(board.is_finished());
}
