//! Closed loop: one ordered list (warmup first) and one concurrency limit shared by warmup and measured
//! requests, as evalscope; optional Poisson pacing by rate on an absolute timeline.
//!
//! A request's intended send time is the moment its slot became free (and its paced time had come), so
//! the send lag measures only the client's own delay.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::SeedableRng;
use tokio::sync::{mpsc, Semaphore};

use super::schedule::{poisson_offsets_s, sleep_until_precise};
use super::{send_one, Dispatch, DispatchOutcome, HttpClient, PreparedRequest};
use crate::record::RequestRecord;
use crate::shutdown::Shutdown;

pub(super) async fn run(
    client: &HttpClient,
    dispatch: &Dispatch,
    requests: Vec<PreparedRequest>,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> DispatchOutcome {
    let parallel = dispatch.parallel.max(1);
    let slots = Arc::new(Semaphore::new(parallel));
    let abandoned = Arc::new(AtomicUsize::new(0));
    let offsets = (dispatch.rate > 0.0).then(|| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(dispatch.seed);
        poisson_offsets_s(requests.len(), dispatch.rate, &mut rng)
    });
    let t0 = Instant::now();
    let mut deadline: Option<Instant> = None;
    let mut outcome = DispatchOutcome::default();

    for (index, request) in requests.into_iter().enumerate() {
        if shutdown.stopping() {
            outcome.interrupted = true;
            break;
        }
        if let Some(offsets) = &offsets {
            let at = t0 + std::time::Duration::from_secs_f64(offsets[index]);
            tokio::select! {
                biased;
                _ = shutdown.stopped() => { outcome.interrupted = true; break }
                _ = sleep_until_precise(at) => {}
            }
        }
        let permit = tokio::select! {
            biased;
            _ = shutdown.stopped() => { outcome.interrupted = true; break }
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let scheduled_at = Instant::now();
        if !request.is_warmup {
            if let Some(limit) = dispatch.duration {
                match deadline {
                    None => deadline = Some(scheduled_at + limit),
                    Some(d) if scheduled_at >= d => {
                        outcome.hit_duration = true;
                        break;
                    }
                    Some(_) => {}
                }
            }
        }
        let (client, records, shutdown, abandoned) = (
            client.clone(),
            records.clone(),
            shutdown.clone(),
            abandoned.clone(),
        );
        tokio::spawn(async move {
            if send_one(client, index, request, scheduled_at, records, shutdown).await {
                abandoned.fetch_add(1, Ordering::Relaxed);
            }
            drop(permit);
        });
        outcome.dispatched += 1;
    }
    // Every slot back means every request has finished (or was abandoned).
    let _all = slots
        .acquire_many(parallel as u32)
        .await
        .expect("the semaphore is never closed");
    outcome.abandoned = abandoned.load(Ordering::Relaxed);
    outcome
}
