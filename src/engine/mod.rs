//! The load engine: dispatchers that decide *when* each request is sent (closed loop with a concurrency
//! cap, open loop on an absolute schedule), the client that sends it, and the connection test.
//!
//! Requests come from a [`RequestFeed`]: prepared ahead of the dispatcher (bodies serialised once, by a
//! producer thread, into a bounded look-ahead), taken in order. Each finished request becomes a
//! [`RequestRecord`] sent over a channel to the one aggregator that owns the statistics.

pub mod client;
mod closed_loop;
pub mod conn_test;
pub mod conversation;
pub mod dag;
pub mod endpoints;
pub mod feed;
pub mod gate;
pub mod hooks;
pub mod http1;
mod open_loop;
pub mod proxy;
pub mod request_id;
pub mod schedule;
pub mod setup_error;
pub mod sse;
pub mod timer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::plan::Load;
use crate::record::RequestRecord;
use crate::shutdown::Shutdown;
pub use client::HttpClient;
pub use feed::RequestFeed;
pub use gate::{Gate, GateKeeper};

/// One prepared request.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    /// The exact body.
    pub body: Arc<str>,
    /// Warmup requests are not measured.
    pub is_warmup: bool,
    /// Its arrival offset on the run's schedule, seconds after the schedule's origin: set on every
    /// measured request of an open-loop run (a replayed trace's own offsets, else the seeded schedule) and
    /// on every request of a paced closed-loop run; `None` when unpaced.
    pub offset_s: Option<f64>,
    /// The prompt tokens llmperf means the server to count, when the dataset knows it.
    pub intended_prompt_tokens: Option<u64>,
    /// Stored in the `request_id` column.
    pub request_id: Option<Arc<str>>,
    /// Header lines sent with this request only (`Name: value\r\n` each).
    pub extra_headers: Option<Arc<str>>,
}

impl PreparedRequest {
    /// A request of `body` without per-request extras.
    pub fn new(body: Arc<str>, is_warmup: bool) -> Self {
        PreparedRequest {
            body,
            is_warmup,
            offset_s: None,
            intended_prompt_tokens: None,
            request_id: None,
            extra_headers: None,
        }
    }

    /// Its record, as request `index` meant to be sent at `scheduled_at`.
    pub fn into_record(self, index: usize, scheduled_at: Instant) -> RequestRecord {
        let mut r = RequestRecord::new(index, self.is_warmup, self.body, scheduled_at);
        r.request_id = self.request_id;
        r.extra_headers = self.extra_headers;
        r.intended_prompt_tokens = self.intended_prompt_tokens;
        r
    }
}

/// What the dispatcher needs for one run.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// How the run releases its requests. A paced or open-loop run's requests carry their offsets
    /// ([`PreparedRequest::offset_s`]).
    pub load: Load,
    /// Workers (closed loop: this process's share of the concurrency cap).
    pub parallel: usize,
    /// Soft time limit for the measured phase.
    pub duration: Option<Duration>,
    /// Open loop: the origin of the measured schedule (`--start-at`), if later than the warmup's end.
    pub origin: Option<Instant>,
    /// Passed once the warmup has drained, right before the first measured request (see [`gate`]).
    pub gate: Option<Gate>,
}

/// How dispatching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DispatchOutcome {
    /// Requests handed to the client (warmup included).
    pub dispatched: usize,
    /// Requests in flight abandoned after an interruption's grace period.
    pub abandoned: usize,
    /// Dispatch stopped because `--duration` passed.
    pub hit_duration: bool,
    /// Dispatch stopped early because of a signal (some requests were never sent).
    pub interrupted: bool,
    /// When the measured schedule began (open loop: after the warmup phase; closed loop: at once).
    pub began: Option<Instant>,
    /// The gate stayed shut: no measured request was sent.
    pub held_at_gate: bool,
}

/// Sends the requests of `feed` (warmup first) per `dispatch`, delivering every finished record to `records`. Returns
/// once every dispatched request has finished or was abandoned; an error when the dispatcher could not run
/// (its thread could not start, or its task was cancelled): a run that sent nothing never passes for done.
///
/// The dispatcher runs as a task of the runtime (not on the thread that awaits this), so handing work
/// between it and the request tasks never needs a cross-thread wake-up.
pub async fn run(
    client: &HttpClient,
    dispatch: &Dispatch,
    requests: RequestFeed,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> anyhow::Result<DispatchOutcome> {
    let (client, dispatch, shutdown) = (client.clone(), dispatch.clone(), shutdown.clone());
    let task = tokio::spawn(async move {
        match dispatch.load {
            Load::Closed { .. } => {
                Ok(closed_loop::run(&client, &dispatch, requests, records, &shutdown).await)
            }
            Load::Open { .. } | Load::Trace { .. } => {
                open_loop::run(&client, &dispatch, requests, records, &shutdown).await
            }
        }
    });
    joined(task.await)?
}

/// The value of a joined task: a panic goes on unwinding, a cancellation is an error.
fn joined<T>(result: Result<T, tokio::task::JoinError>) -> anyhow::Result<T> {
    match result {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!(
            "the dispatcher task was cancelled before the run ended ({e})"
        )),
    }
}

/// Sends one request and delivers its record, unless the run abandons it first. `free_at` is set to the
/// moment the response had been read. Returns whether it was abandoned.
async fn send_one(
    client: &HttpClient,
    index: usize,
    request: PreparedRequest,
    scheduled_at: Instant,
    records: &mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
    free_at: &mut Instant,
) -> bool {
    let record = request.into_record(index, scheduled_at);
    tokio::select! {
        biased;
        record = client.send(record) => {
            *free_at = Instant::now();
            let _ = records.send(record).await;
            false
        }
        _ = shutdown.abandoned() => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_dispatcher_is_an_error() {
        let task = tokio::spawn(std::future::pending::<DispatchOutcome>());
        task.abort();
        let err = joined(task.await).unwrap_err();
        assert!(err.to_string().contains("cancelled"), "{err}");
        let done = tokio::spawn(async { DispatchOutcome::default() });
        assert_eq!(joined(done.await).unwrap(), DispatchOutcome::default());
    }
}
