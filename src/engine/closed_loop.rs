//! Closed loop: one ordered list (warmup first) and one concurrency limit shared by warmup and measured
//! requests, as evalscope; optional Poisson pacing by rate on an absolute timeline.
//!
//! `parallel` worker tasks each take the next request in order, send it, deliver its record and take the
//! next: no task spawned and no semaphore per request. A request's intended send time is the moment its
//! worker's previous response had been read (and its paced time had come), so the send lag measures only
//! the client's own delay (delivering the previous record, picking the next one). With pacing, workers take
//! the pacer in turn, so requests leave in order at `t0 + offset_i` at the earliest.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinSet;

use super::schedule::seeded_offsets_s;
use super::timer::PreciseTimer;
use super::{send_one, Dispatch, DispatchOutcome, HttpClient, PreparedRequest};
use crate::record::RequestRecord;
use crate::shutdown::Shutdown;

/// What the workers share.
struct Shared {
    requests: Vec<PreparedRequest>,
    next: AtomicUsize,
    /// Set when `--duration` has passed: no worker takes another request.
    done: AtomicBool,
    hit_duration: AtomicBool,
    dispatched: AtomicUsize,
    abandoned: AtomicUsize,
    /// End of the measured phase (`--duration` after the first measured request was scheduled).
    deadline: OnceLock<Instant>,
    duration: Option<Duration>,
    /// Paced runs: the arrival offsets, their origin, and the timer workers take in turn.
    pacing: Option<(Vec<f64>, Instant, Mutex<PreciseTimer>)>,
}

impl Shared {
    /// The next request's index and its intended send time (`free_at`, or its paced time if later), or
    /// `None` when the run is over.
    async fn take(&self, free_at: Instant, shutdown: &Shutdown) -> Option<(usize, Instant)> {
        match &self.pacing {
            None => {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                (i < self.requests.len()).then_some((i, free_at))
            }
            Some((offsets, t0, timer)) => {
                let mut timer = timer.lock().await;
                if self.done.load(Ordering::Relaxed) || shutdown.stopping() {
                    return None;
                }
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                if i >= self.requests.len() {
                    return None;
                }
                let at = *t0 + Duration::from_secs_f64(offsets[i]);
                tokio::select! {
                    _ = timer.sleep_until(at) => {}
                    _ = shutdown.stopped() => return None,
                }
                Some((i, at.max(free_at)))
            }
        }
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
        let Some((index, scheduled_at)) = shared.take(free_at, &shutdown).await else {
            return;
        };
        let request = shared.requests[index].clone();
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
    requests: Vec<PreparedRequest>,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> DispatchOutcome {
    let began = Instant::now();
    let workers = dispatch.parallel.max(1).min(requests.len().max(1));
    let pacing = (dispatch.rate > 0.0).then(|| {
        let offsets = match &dispatch.offsets_s {
            Some(given) => given.clone(),
            None => seeded_offsets_s(requests.len(), dispatch.rate, dispatch.shape, dispatch.seed),
        };
        (offsets, Instant::now(), Mutex::new(PreciseTimer::new()))
    });
    let shared = Arc::new(Shared {
        requests,
        next: AtomicUsize::new(0),
        done: AtomicBool::new(false),
        hit_duration: AtomicBool::new(false),
        dispatched: AtomicUsize::new(0),
        abandoned: AtomicUsize::new(0),
        deadline: OnceLock::new(),
        duration: dispatch.duration,
        pacing,
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
        interrupted: !hit_duration && dispatched < shared.requests.len() && shutdown.stopping(),
        began: Some(began),
    }
}
