//! Open loop: the warmup requests run as a phase of their own first; then measured requests are sent on a
//! Poisson schedule fixed in advance on an absolute timeline (`t0 + offset_i`), whatever the number in
//! flight. Each record keeps its intended send time, so latency can also be read from it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

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
    let abandoned = Arc::new(AtomicUsize::new(0));
    let mut outcome = DispatchOutcome::default();
    let split = requests.iter().take_while(|r| r.is_warmup).count();
    let mut requests = requests;
    let measured = requests.split_off(split);
    let warmup = requests;

    // Warmup phase: all at once, then wait for every one.
    let mut warm = JoinSet::new();
    for (index, request) in warmup.into_iter().enumerate() {
        let args = (client.clone(), records.clone(), shutdown.clone());
        warm.spawn(send_one(
            args.0,
            index,
            request,
            Instant::now(),
            args.1,
            args.2,
        ));
        outcome.dispatched += 1;
    }
    while let Some(res) = warm.join_next().await {
        if matches!(res, Ok(true)) {
            outcome.abandoned += 1;
        }
    }

    let offsets = {
        let mut rng = rand::rngs::StdRng::seed_from_u64(dispatch.seed);
        poisson_offsets_s(measured.len(), dispatch.rate, &mut rng)
    };
    let t0 = Instant::now();
    let deadline = dispatch.duration.map(|d| t0 + d);
    let mut in_flight = JoinSet::new();
    for (i, request) in measured.into_iter().enumerate() {
        let at = t0 + Duration::from_secs_f64(offsets[i]);
        if deadline.is_some_and(|d| at >= d) {
            outcome.hit_duration = true;
            break;
        }
        tokio::select! {
            biased;
            _ = shutdown.stopped() => { outcome.interrupted = true; break }
            _ = sleep_until_precise(at) => {}
        }
        let args = (
            client.clone(),
            records.clone(),
            shutdown.clone(),
            abandoned.clone(),
        );
        in_flight.spawn(async move {
            if send_one(args.0, split + i, request, at, args.1, args.2).await {
                args.3.fetch_add(1, Ordering::Relaxed);
            }
        });
        outcome.dispatched += 1;
        // Reap finished tasks as we go so the set stays as small as the number in flight.
        while in_flight.try_join_next().is_some() {}
    }
    while in_flight.join_next().await.is_some() {}
    outcome.abandoned += abandoned.load(Ordering::Relaxed);
    outcome
}
