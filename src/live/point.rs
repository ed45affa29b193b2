//! One run of the sweep as readers see it while it runs: what it aims at ([`PointDesc`]), its counters
//! and histograms ([`PointStats`], published by the aggregator in batches), its recent values
//! ([`Recent`]), and the two counts readers need to the request ([`Point::in_flight`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::histogram::{Histogram, Ring, ITL_BOUNDS_S, LAG_BOUNDS_S, LATENCY_BOUNDS_S};
use crate::record::{FailureKind, RequestRecord};

/// How many recent values of each series the dashboard's percentiles are taken over.
pub const RECENT: usize = 1024;

/// Latest values of the server's known gauges (`--server-metrics`), by display name; shared with the
/// scraper thread, which replaces them after every good scrape.
pub type ServerGauges = Arc<Mutex<Vec<(&'static str, f64)>>>;

/// What a run aims at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Closed loop: this process's share of `--parallel`, and the Poisson pacing rate if any.
    Concurrency {
        /// Requests in flight at most.
        parallel: usize,
        /// Paced at this many requests per second.
        rate: Option<f64>,
    },
    /// Open loop at this many requests per second.
    Rate(f64),
    /// A replayed trace's own timestamps.
    Trace,
}

/// A run of the sweep: its name, place and aim.
#[derive(Debug, Clone, PartialEq)]
pub struct PointDesc {
    /// The run's folder name, as the run folder names it: the `point` label.
    pub name: String,
    /// 1-based place in the sweep.
    pub index: usize,
    /// Measured requests (conversations for multi-turn) this process sends in the run.
    pub total: u64,
    /// Its aim.
    pub target: Target,
}

/// The counters and histograms of a run's measured requests.
#[derive(Debug, Clone, PartialEq)]
pub struct PointStats {
    /// Measured requests finished (every one is stored: the database's row count).
    pub completed: u64,
    /// Of which succeeded.
    pub succeeded: u64,
    /// Failed, by [`FailureKind::index`].
    pub failed: [u64; FailureKind::ALL.len()],
    /// Prompt tokens of the successful requests.
    pub input_tokens: u64,
    /// Completion tokens of the successful requests.
    pub output_tokens: u64,
    /// Time to first token (successes).
    pub ttft: Histogram,
    /// Gaps between output chunks (successes).
    pub itl: Histogram,
    /// Whole-request latency (successes).
    pub latency: Histogram,
    /// Scheduled to sent (every measured request).
    pub send_lag: Histogram,
    /// Longest wait of a response's bytes in the socket (every measured request).
    pub read_lag: Histogram,
    /// The latest failure: its kind and text (one line).
    pub latest_error: Option<(FailureKind, String)>,
    /// When the first measured request finished.
    pub first_at: Option<Instant>,
}

impl Default for PointStats {
    fn default() -> Self {
        PointStats {
            completed: 0,
            succeeded: 0,
            failed: [0; FailureKind::ALL.len()],
            input_tokens: 0,
            output_tokens: 0,
            ttft: Histogram::new(LATENCY_BOUNDS_S),
            itl: Histogram::new(ITL_BOUNDS_S),
            latency: Histogram::new(LATENCY_BOUNDS_S),
            send_lag: Histogram::new(LAG_BOUNDS_S),
            read_lag: Histogram::new(LAG_BOUNDS_S),
            latest_error: None,
            first_at: None,
        }
    }
}

/// The longest error text kept for display.
const MAX_ERROR_CHARS: usize = 300;

impl PointStats {
    /// Counts one measured record (completed by the aggregator).
    pub fn add(&mut self, r: &RequestRecord, recent: &mut RecentBatch) {
        self.completed += 1;
        self.first_at.get_or_insert(r.completed_at);
        let send_lag = r.send_lag_s();
        let read_lag = r.read_lag.as_secs_f64();
        self.send_lag.observe(send_lag);
        self.read_lag.observe(read_lag);
        recent.send_lag.push(send_lag);
        recent.read_lag.push(read_lag);
        if !r.success {
            let kind = r.failure.unwrap_or(FailureKind::BadResponse);
            self.failed[kind.index()] += 1;
            let text: String = r
                .error
                .as_deref()
                .unwrap_or("")
                .chars()
                .take(MAX_ERROR_CHARS)
                .collect();
            self.latest_error = Some((kind, crate::record::one_line(&text)));
            return;
        }
        self.succeeded += 1;
        self.input_tokens += r.prompt_tokens();
        self.output_tokens += r.completion_tokens();
        let (ttft, latency) = (r.ttft_s(), r.latency_s());
        self.ttft.observe(ttft);
        self.latency.observe(latency);
        recent.ttft.push(ttft);
        recent.latency.push(latency);
        if r.completion_tokens() > 1 && r.is_stream {
            recent.tpot.push(r.tpot_s());
        }
        for gap in r.itl_s() {
            self.itl.observe(gap);
            recent.itl.push(gap);
        }
    }

    /// Adds `other`'s counts (a batch the aggregator publishes).
    pub fn merge(&mut self, other: &PointStats) {
        self.completed += other.completed;
        self.succeeded += other.succeeded;
        for (a, b) in self.failed.iter_mut().zip(other.failed) {
            *a += b;
        }
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.ttft.merge(&other.ttft);
        self.itl.merge(&other.itl);
        self.latency.merge(&other.latency);
        self.send_lag.merge(&other.send_lag);
        self.read_lag.merge(&other.read_lag);
        if other.latest_error.is_some() {
            self.latest_error.clone_from(&other.latest_error);
        }
        if self.first_at.is_none() {
            self.first_at = other.first_at;
        }
    }

    /// Measured requests that failed.
    pub fn failed_total(&self) -> u64 {
        self.failed.iter().sum()
    }
}

/// Values of one batch not yet published, oldest first.
#[derive(Debug, Default)]
pub struct RecentBatch {
    pub(super) ttft: Vec<f64>,
    pub(super) tpot: Vec<f64>,
    pub(super) itl: Vec<f64>,
    pub(super) latency: Vec<f64>,
    pub(super) send_lag: Vec<f64>,
    pub(super) read_lag: Vec<f64>,
}

impl RecentBatch {
    fn clear(&mut self) {
        for v in [
            &mut self.ttft,
            &mut self.tpot,
            &mut self.itl,
            &mut self.latency,
            &mut self.send_lag,
            &mut self.read_lag,
        ] {
            v.clear();
        }
    }
}

/// The latest [`RECENT`] values of each series (seconds), for percentiles over a recent window.
#[derive(Debug, Clone, PartialEq)]
pub struct Recent {
    /// Time to first token.
    pub ttft: Ring,
    /// Time per output token (streams with more than one token).
    pub tpot: Ring,
    /// Gaps between output chunks.
    pub itl: Ring,
    /// Whole-request latency.
    pub latency: Ring,
    /// Send lag.
    pub send_lag: Ring,
    /// Read lag.
    pub read_lag: Ring,
}

impl Default for Recent {
    fn default() -> Self {
        Recent {
            ttft: Ring::new(RECENT),
            tpot: Ring::new(RECENT),
            itl: Ring::new(RECENT),
            latency: Ring::new(RECENT),
            send_lag: Ring::new(RECENT),
            read_lag: Ring::new(RECENT),
        }
    }
}

impl Recent {
    fn extend(&mut self, b: &RecentBatch) {
        self.ttft.extend_from(&b.ttft);
        self.tpot.extend_from(&b.tpot);
        self.itl.extend_from(&b.itl);
        self.latency.extend_from(&b.latency);
        self.send_lag.extend_from(&b.send_lag);
        self.read_lag.extend_from(&b.read_lag);
    }
}

/// A run as readers see it.
#[derive(Debug)]
pub struct Point {
    /// What it aims at.
    pub desc: PointDesc,
    /// Requests the run's HTTP client has started (warmup included), counted by the client.
    sent: Arc<AtomicU64>,
    /// `sent` when the run's aggregator started (the connection test went before).
    sent_base: u64,
    /// Records the aggregator has received (warmup included); written by the aggregator only.
    pub(super) received: AtomicU64,
    /// Warmup requests finished.
    pub(super) warmup_done: AtomicU64,
    /// The aggregator has published its last batch.
    pub(super) finished: AtomicBool,
    pub(super) stats: Mutex<PointStats>,
    pub(super) recent: Mutex<Recent>,
    server: Mutex<Option<ServerGauges>>,
    /// When the run was registered.
    pub started: Instant,
}

impl Point {
    pub(super) fn new(desc: PointDesc, sent: Arc<AtomicU64>) -> Point {
        let sent_base = sent.load(Ordering::Relaxed);
        Point {
            desc,
            sent,
            sent_base,
            received: AtomicU64::new(0),
            warmup_done: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            stats: Mutex::new(PointStats::default()),
            recent: Mutex::new(Recent::default()),
            server: Mutex::new(None),
            started: Instant::now(),
        }
    }

    /// Requests the run has started sending (warmup included).
    pub fn sent(&self) -> u64 {
        self.sent
            .load(Ordering::Relaxed)
            .saturating_sub(self.sent_base)
    }

    /// Requests sent and not yet finished (warmup included).
    pub fn in_flight(&self) -> u64 {
        let received = self.received.load(Ordering::Acquire);
        self.sent().saturating_sub(received)
    }

    /// Warmup requests finished.
    pub fn warmup_done(&self) -> u64 {
        self.warmup_done.load(Ordering::Relaxed)
    }

    /// Whether the run's aggregator has ended.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// A copy of the published counters and histograms.
    pub fn stats(&self) -> PointStats {
        lock(&self.stats).clone()
    }

    /// A copy of the published recent values.
    pub fn recent(&self) -> Recent {
        lock(&self.recent).clone()
    }

    /// Attaches the server's gauges (`--server-metrics`).
    pub fn set_server(&self, gauges: ServerGauges) {
        *lock(&self.server) = Some(gauges);
    }

    /// The server's latest gauges, empty without `--server-metrics` or before its first scrape.
    pub fn server(&self) -> Vec<(&'static str, f64)> {
        match &*lock(&self.server) {
            Some(g) => lock(g).clone(),
            None => Vec::new(),
        }
    }
}

/// Locks `m`, taking the value even if a panicking thread poisoned it (the data is plain counts).
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The aggregator's side of a [`Point`]: counts each record into a local batch and publishes the batch
/// when the lock is free ([`PointFeed::publish`]), so a reader never makes the aggregator wait.
#[derive(Debug)]
pub struct PointFeed {
    point: Arc<Point>,
    pending: PointStats,
    recent: RecentBatch,
    pending_n: u64,
}

impl PointFeed {
    pub(super) fn new(point: Arc<Point>) -> PointFeed {
        PointFeed {
            point,
            pending: PointStats::default(),
            recent: RecentBatch::default(),
            pending_n: 0,
        }
    }

    /// The point it feeds.
    pub fn point(&self) -> &Arc<Point> {
        &self.point
    }

    /// One warmup request finished.
    pub fn warmup_finished(&mut self) {
        let p = &self.point;
        p.warmup_done
            .store(p.warmup_done.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        p.received
            .store(p.received.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// One measured request finished (after the aggregator completed its record).
    pub fn record(&mut self, r: &RequestRecord) {
        let p = &self.point;
        p.received
            .store(p.received.load(Ordering::Relaxed) + 1, Ordering::Release);
        self.pending.add(r, &mut self.recent);
        self.pending_n += 1;
    }

    /// Publishes what was counted since the last time, unless a reader holds the lock (then it is
    /// published next time).
    pub fn publish(&mut self) {
        if self.pending_n == 0 {
            return;
        }
        let Ok(mut stats) = self.point.stats.try_lock() else {
            return;
        };
        let Ok(mut recent) = self.point.recent.try_lock() else {
            return;
        };
        stats.merge(&self.pending);
        recent.extend(&self.recent);
        drop((stats, recent));
        self.clear();
    }

    fn clear(&mut self) {
        self.pending.completed = 0;
        self.pending.succeeded = 0;
        self.pending.failed = [0; FailureKind::ALL.len()];
        self.pending.input_tokens = 0;
        self.pending.output_tokens = 0;
        for h in [
            &mut self.pending.ttft,
            &mut self.pending.itl,
            &mut self.pending.latency,
            &mut self.pending.send_lag,
            &mut self.pending.read_lag,
        ] {
            h.clear();
        }
        self.pending.latest_error = None;
        self.pending.first_at = None;
        self.recent.clear();
        self.pending_n = 0;
    }

    /// Publishes the rest (waiting for the lock) and marks the run finished.
    pub fn finish(mut self) {
        if self.pending_n > 0 {
            lock(&self.point.stats).merge(&self.pending);
            lock(&self.point.recent).extend(&self.recent);
            self.clear();
        }
        self.point.finished.store(true, Ordering::Release);
    }
}
