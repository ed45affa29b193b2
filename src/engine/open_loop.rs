//! Open loop: the warmup requests run as a phase of their own first (one every 1/`--rate` s); then measured
//! requests are sent on a Poisson schedule fixed in advance on an absolute timeline (`t0 + offset_i`, each request carrying its
//! offset), whatever the number in flight. Each record keeps its intended send time, so latency can also be read from it.
//!
//! The schedule is kept by a dedicated OS thread, not a runtime task: a task woken by a timer waits behind
//! whatever the busy workers are running (measured: send lag p99 ~2 ms at 1,000 req/s with 200 streams in
//! flight). The thread sleeps with a 1 ns timer slack to [`SPIN`] before each slot, spins the rest, then
//! writes the request itself on an idle kept-alive connection ([`HttpClient::try_start_now`]) and hands
//! the rest of the exchange to the runtime. With no idle connection the whole request goes to the runtime
//! (its send lag then includes the hand-over). Idle, the thread sleeps: no core is burned between slots.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use super::{send_one, Dispatch, DispatchOutcome, HttpClient, RequestFeed};
use crate::record::RequestRecord;
use crate::shutdown::Shutdown;

/// How long before a slot the dispatcher stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(40);

/// Longest single sleep, so a stop is noticed promptly.
const MAX_NAP: Duration = Duration::from_millis(20);

/// Requests in flight, and a wake-up when none is left.
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
    abandoned: AtomicUsize,
}

/// Decrements the in-flight count when a request task ends (also on panic).
struct Guard(Arc<InFlight>);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl InFlight {
    async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Sleeps until `deadline` (spinning only the last [`SPIN`]); returns early with `false` on a stop.
fn wait_for_slot(deadline: Instant, shutdown: &Shutdown) -> bool {
    loop {
        if shutdown.stopping() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep((left - SPIN).min(MAX_NAP));
        } else {
            while Instant::now() < deadline {
                std::hint::spin_loop();
            }
            return true;
        }
    }
}

/// What the dispatcher thread needs.
struct Schedule {
    client: HttpClient,
    records: mpsc::Sender<RequestRecord>,
    shutdown: Shutdown,
    runtime: tokio::runtime::Handle,
    in_flight: Arc<InFlight>,
    duration: Option<Duration>,
    /// `--start-at`: the schedule's origin, unless the warmup ran past it.
    origin: Option<Instant>,
}

/// How the dispatcher thread ended.
#[derive(Default)]
struct ThreadOutcome {
    dispatched: usize,
    hit_duration: bool,
    /// A signal stopped it before every request was sent.
    interrupted: bool,
    /// The schedule's origin.
    began: Option<Instant>,
}

/// The dispatcher thread: takes each measured request (its body ready) before waiting for its slot.
fn dispatch_thread(s: Schedule, mut measured: RequestFeed) -> ThreadOutcome {
    // Sleeps end within microseconds of their deadline (the default timer slack is 50 µs).
    crate::sys::set_timer_slack_ns(1);
    let t0 = s
        .origin
        .map_or_else(Instant::now, |o| o.max(Instant::now()));
    let deadline = s.duration.map(|d| t0 + d);
    let mut out = ThreadOutcome {
        began: Some(t0),
        ..ThreadOutcome::default()
    };
    while let Some((index, request)) = measured.blocking_next() {
        let at = t0 + Duration::from_secs_f64(request.offset_s.unwrap_or(0.0));
        if deadline.is_some_and(|d| at >= d) {
            out.hit_duration = true;
            return out;
        }
        if !wait_for_slot(at, &s.shutdown) {
            out.interrupted = true;
            break;
        }
        let mut record = request.into_record(index, at);
        let started = s.client.try_start_now(&mut record);
        s.in_flight.count.fetch_add(1, Ordering::AcqRel);
        let guard = Guard(s.in_flight.clone());
        let (client, records, shutdown) = (s.client.clone(), s.records.clone(), s.shutdown.clone());
        s.runtime.spawn(async move {
            let _guard = guard;
            tokio::select! {
                biased;
                record = client.send_from(record, started) => {
                    let _ = records.send(record).await;
                }
                _ = shutdown.abandoned() => {
                    _guard.0.abandoned.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        out.dispatched += 1;
    }
    out
}

pub(super) async fn run(
    client: &HttpClient,
    dispatch: &Dispatch,
    mut requests: RequestFeed,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> anyhow::Result<DispatchOutcome> {
    let mut outcome = DispatchOutcome::default();

    // Warmup phase, paced at --rate (one every 1/rate s: warmup obeys the configured rate; the measured
    // schedule's seeded draws are left as they are), then wait for every one.
    let mut warm = JoinSet::new();
    let gap = dispatch
        .load
        .schedule_rate()
        .map(|r| Duration::from_secs_f64(1.0 / r.per_s()));
    let warm_t0 = tokio::time::Instant::now();
    for k in 0..requests.warmup() {
        if let Some(gap) = gap {
            tokio::select! {
                _ = tokio::time::sleep_until(warm_t0 + gap * k as u32) => {}
                _ = shutdown.stopped() => break,
            }
        }
        let Some((index, request)) = requests.next().await else {
            break;
        };
        let (client, records, shutdown) = (client.clone(), records.clone(), shutdown.clone());
        warm.spawn(async move {
            let at = Instant::now();
            let mut free_at = at;
            send_one(
                &client,
                index,
                request,
                at,
                &records,
                &shutdown,
                &mut free_at,
            )
            .await
        });
        outcome.dispatched += 1;
    }
    while let Some(res) = warm.join_next().await {
        if matches!(res, Ok(true)) {
            outcome.abandoned += 1;
        }
    }
    if let Some(gate) = &dispatch.gate {
        if !gate.pass().await {
            outcome.held_at_gate = true;
            return Ok(outcome);
        }
    }

    // The measured requests carry their offsets: a replayed trace's own, else the seeded schedule.
    let in_flight = Arc::new(InFlight::default());
    let schedule = Schedule {
        client: client.clone(),
        records,
        shutdown: shutdown.clone(),
        runtime: tokio::runtime::Handle::current(),
        in_flight: in_flight.clone(),
        duration: dispatch.duration,
        origin: dispatch.origin,
    };
    let thread = start_dispatcher(
        std::thread::Builder::new().name("llmperf-dispatch".into()),
        move || dispatch_thread(schedule, requests),
    )?;
    // The thread sleeps between slots; wait for it without blocking a worker.
    let thread_outcome = match tokio::task::spawn_blocking(move || thread.join()).await {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    in_flight.wait_idle().await;
    outcome.dispatched += thread_outcome.dispatched;
    outcome.hit_duration = thread_outcome.hit_duration;
    outcome.interrupted = thread_outcome.interrupted;
    outcome.began = thread_outcome.began;
    outcome.abandoned += in_flight.abandoned.load(Ordering::Relaxed);
    Ok(outcome)
}

/// Starts the dispatcher thread; an error (the run cannot send on schedule) when it cannot start. Warmup
/// requests may already be in flight then: they finish on their own.
fn start_dispatcher<F>(
    builder: std::thread::Builder,
    body: F,
) -> anyhow::Result<std::thread::JoinHandle<ThreadOutcome>>
where
    F: FnOnce() -> ThreadOutcome + Send + 'static,
{
    builder
        .spawn(body)
        .map_err(|e| anyhow::anyhow!("cannot start the open-loop dispatcher thread: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatcher_thread_that_cannot_start_is_an_error() {
        // No system can give a thread a stack this large: the spawn fails.
        let builder = std::thread::Builder::new().stack_size(usize::MAX / 2);
        let err = start_dispatcher(builder, ThreadOutcome::default).unwrap_err();
        assert!(err.to_string().contains("dispatcher thread"), "{err}");
        let ok = std::thread::Builder::new();
        let outcome = start_dispatcher(ok, || ThreadOutcome {
            dispatched: 3,
            ..ThreadOutcome::default()
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(outcome.dispatched, 3);
    }
}
