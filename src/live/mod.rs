//! What a running invocation shows while it runs: a cheap shared snapshot of the client's live state,
//! which the run's aggregator publishes and the terminal dashboard and the metrics endpoint read on their
//! own threads.
//!
//! The [`Board`] is the invocation (its run name, shard, sweep), with one [`Point`] per run of the sweep.
//! The aggregator, the one owner of results, counts each record into its [`PointFeed`]'s local batch and
//! publishes the batch with a `try_lock` (a reader holding the lock only postpones it), so neither the
//! aggregator nor the request path ever waits for a reader. Two counts are atomics read at any moment:
//! requests the run's HTTP client started (counted by the client) and records the aggregator received,
//! whose difference is the number in flight.

mod histogram;
mod point;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use histogram::{quantile, Histogram, Ring};
pub use point::{Point, PointDesc, PointFeed, PointStats, Recent, ServerGauges, Target, RECENT};

use point::lock;

/// The invocation as readers see it.
#[derive(Debug)]
pub struct Board {
    /// The run name (`--name`, else the model's basename): the `run` label.
    pub run: String,
    /// This process's shard (`K`), `None` when not sharded: the `shard` label.
    pub shard: Option<u32>,
    /// How many runs the sweep plans (`None` when a search decides them: `--sla-auto-tune`).
    pub planned: Option<usize>,
    /// The model, as sent.
    pub model: String,
    /// When the board was made.
    pub started: Instant,
    points: Mutex<Vec<Arc<Point>>>,
    finished: AtomicBool,
}

impl Board {
    /// The board of an invocation.
    pub fn new(run: String, shard: Option<u32>, planned: Option<usize>, model: String) -> Board {
        Board {
            run,
            shard,
            planned,
            model,
            started: Instant::now(),
            points: Mutex::new(Vec::new()),
            finished: AtomicBool::new(false),
        }
    }

    /// Registers the next run; `sent` is the run's HTTP client's count of requests started. The feed goes
    /// to the run's aggregator.
    pub fn start_point(
        &self,
        name: String,
        total: u64,
        target: Target,
        sent: Arc<AtomicU64>,
    ) -> PointFeed {
        let mut points = lock(&self.points);
        let desc = PointDesc {
            name,
            index: points.len() + 1,
            total,
            target,
        };
        let point = Arc::new(Point::new(desc, sent));
        points.push(point.clone());
        PointFeed::new(point)
    }

    /// Every run so far, in order.
    pub fn points(&self) -> Vec<Arc<Point>> {
        lock(&self.points).clone()
    }

    /// The latest run (the one running, or the last one finished).
    pub fn latest(&self) -> Option<Arc<Point>> {
        lock(&self.points).last().cloned()
    }

    /// Marks the sweep ended.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }

    /// Whether the sweep has ended.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests;
