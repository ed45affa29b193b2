//! Closed loop: one ordered feed of requests (warmup first) and one concurrency limit shared by warmup and
//! measured requests, as evalscope; optional Poisson pacing by rate on an absolute timeline.
//!
//! `parallel` worker tasks each take the next request in order (one at a time from the feed), send it, deliver its record and take the
//! next: no task spawned and no semaphore per request. A request's intended send time is the moment its
//! worker's previous response had been read (and its paced time had come), so the send lag measures only
//! the client's own delay (delivering the previous record, picking the next one). With pacing, workers take
//! the pacer in turn, so requests leave in order at `t0 + offset_i` at the earliest.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinSet;

use super::timer::PreciseTimer;
use super::{send_one, Dispatch, DispatchOutcome, HttpClient, PreparedRequest, RequestFeed};
use crate::record::RequestRecord;
use crate::shutdown::Shutdown;

/// The feed and, in paced runs, the origin of the requests' arrival offsets and the timer: taken by one
/// worker at a time.
struct Taker {
    feed: RequestFeed,
    pacing: Option<(Instant, PreciseTimer)>,
}

/// What the workers share.
struct Shared {
    taker: Mutex<Taker>,
    /// Requests the run sends.
    len: usize,
    /// Set when `--duration` has passed: no worker takes another request.
    done: AtomicBool,
    hit_duration: AtomicBool,
    dispatched: AtomicUsize,
    abandoned: AtomicUsize,
    /// End of the measured phase (`--duration` after the first measured request was scheduled).
    deadline: OnceLock<Instant>,
    duration: Option<Duration>,
}

impl Shared {
    /// The next request, its index and its intended send time (`free_at`, or its paced time if later), or
    /// `None` when the run is over.
    async fn take(
        &self,
        free_at: Instant,
        shutdown: &Shutdown,
    ) -> Option<(usize, PreparedRequest, Instant)> {
        let mut guard = self.taker.lock().await;
        let Taker { feed, pacing } = &mut *guard;
        let Some((t0, timer)) = pacing else {
            let (i, request) = feed.next().await?;
            return Some((i, request, free_at));
        };
        if self.done.load(Ordering::Relaxed) || shutdown.stopping() {
            return None;
        }
        let (i, request) = feed.next().await?;
        let at = *t0 + Duration::from_secs_f64(request.offset_s.unwrap_or(0.0));
        tokio::select! {
            _ = timer.sleep_until(at) => {}
            _ = shutdown.stopped() => return None,
        }
        Some((i, request, at.max(free_at)))
    }

    /// Whether a measured request scheduled at `at` may still go (`--duration`).
    fn within_duration(&self, request: &PreparedRequest, at: Instant) -> bool {
        let Some(limit) = self.duration else {
            return true;
        };
        if request.is_warmup {
            return true;
        }
        let deadline = *self.deadline.get_or_init(|| at + limit);
        if at >= deadline && !self.done.swap(true, Ordering::Relaxed) {
            self.hit_duration.store(true, Ordering::Relaxed);
        }
        at < deadline
    }
}

async fn worker(
    shared: Arc<Shared>,
    client: HttpClient,
    records: mpsc::Sender<RequestRecord>,
    shutdown: Shutdown,
) {
    let mut free_at = Instant::now();
    loop {
        if shared.done.load(Ordering::Relaxed) || shutdown.stopping() {
            return;
        }
        let Some((index, request, scheduled_at)) = shared.take(free_at, &shutdown).await else {
            return;
        };
        if !shared.within_duration(&request, scheduled_at) {
            return;
        }
        shared.dispatched.fetch_add(1, Ordering::Relaxed);
        let abandoned = send_one(
            &client,
            index,
            request,
            scheduled_at,
            &records,
            &shutdown,
            &mut free_at,
        )
        .await;
        if abandoned {
            shared.abandoned.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
}

pub(super) async fn run(
    client: &HttpClient,
    dispatch: &Dispatch,
    requests: RequestFeed,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> DispatchOutcome {
    let began = Instant::now();
    let len = requests.len();
    let workers = dispatch.parallel.max(1).min(len.max(1));
    let shared = Arc::new(Shared {
        taker: Mutex::new(Taker {
            feed: requests,
            pacing: dispatch
                .load
                .schedule_rate()
                .map(|_| (Instant::now(), PreciseTimer::new())),
        }),
        len,
        done: AtomicBool::new(false),
        hit_duration: AtomicBool::new(false),
        dispatched: AtomicUsize::new(0),
        abandoned: AtomicUsize::new(0),
        deadline: OnceLock::new(),
        duration: dispatch.duration,
    });
    let mut set = JoinSet::new();
    for _ in 0..workers {
        set.spawn(worker(
            shared.clone(),
            client.clone(),
            records.clone(),
            shutdown.clone(),
        ));
    }
    drop(records);
    while set.join_next().await.is_some() {}
    let dispatched = shared.dispatched.load(Ordering::Relaxed);
    let hit_duration = shared.hit_duration.load(Ordering::Relaxed);
    DispatchOutcome {
        dispatched,
        abandoned: shared.abandoned.load(Ordering::Relaxed),
        hit_duration,
        // Workers only stop before the list is done for `--duration` or a signal.
        interrupted: !hit_duration && dispatched < shared.len && shutdown.stopping(),
        began: Some(began),
    }
}
