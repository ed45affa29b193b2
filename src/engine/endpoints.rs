//! Several endpoints (`--url-strategy` with a repeated `--url`): one connection pool per endpoint and the
//! choice of each request's endpoint.
//!
//! * `round-robin`: in turn, in the order requests start.
//! * `random`: uniformly at random (a per-client xorshift; the draws are not part of the seeded plan).
//! * `least-inflight`: the endpoint with the fewest requests in flight, ties in turn. An endpoint whose
//!   connection just failed (refused, reset before an answer) is left out for [`DOWN_FOR`] while another
//!   is up, so a dead endpoint gets about one probe request a second while the others take the load.
//!
//! Under `round-robin` and `random` a dead endpoint keeps its share: its requests fail at once with the
//! connection error kind and the others are unaffected. A conversation (`--multi-turn`) or an AgentX
//! session picks its endpoint once and keeps it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::http1;
use crate::plan::UrlStrategy;

/// How long `least-inflight` leaves out an endpoint whose connection failed.
pub const DOWN_FOR: Duration = Duration::from_secs(1);

/// One endpoint: its pool, its URL and its state.
pub struct Slot {
    /// Its kept-alive connections.
    pub pool: http1::Pool,
    /// Its URL.
    pub url: reqwest::Url,
    /// Its URL as stored in the `endpoint` column (set only with several endpoints).
    pub label: Option<std::sync::Arc<str>>,
    in_flight: AtomicUsize,
    /// Milliseconds after `origin` until which the endpoint is left out (0: up).
    down_until_ms: AtomicU64,
}

/// The endpoints of a client.
pub struct Endpoints {
    slots: Vec<Slot>,
    strategy: Option<UrlStrategy>,
    next: AtomicUsize,
    rng: AtomicU64,
    origin: Instant,
}

impl Endpoints {
    /// The endpoints `pools` (with their URLs), chosen by `strategy` (`None`: one endpoint).
    pub fn new(
        pools: Vec<(http1::Pool, reqwest::Url)>,
        strategy: Option<UrlStrategy>,
    ) -> Endpoints {
        let several = pools.len() > 1 || strategy.is_some();
        let slots = pools
            .into_iter()
            .map(|(pool, url)| Slot {
                label: several.then(|| std::sync::Arc::from(url.as_str())),
                pool,
                url,
                in_flight: AtomicUsize::new(0),
                down_until_ms: AtomicU64::new(0),
            })
            .collect();
        Endpoints {
            slots,
            strategy,
            next: AtomicUsize::new(0),
            rng: AtomicU64::new(rand::random::<u64>() | 1),
            origin: Instant::now(),
        }
    }

    /// How many endpoints.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none (never: a client has at least one).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Endpoint `i`.
    pub fn slot(&self, i: u16) -> &Slot {
        &self.slots[(i as usize).min(self.slots.len() - 1)]
    }

    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// The endpoint for the next request (or conversation, session).
    pub fn pick(&self) -> u16 {
        let n = self.slots.len();
        if n <= 1 {
            return 0;
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let i = match self.strategy {
            None | Some(UrlStrategy::RoundRobin) => turn % n,
            Some(UrlStrategy::Random) => {
                let mut x = self.rng.load(Ordering::Relaxed);
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.rng.store(x, Ordering::Relaxed);
                ((u128::from(x) * n as u128) >> 64) as usize
            }
            Some(UrlStrategy::LeastInflight) => {
                let now = self.now_ms();
                let up = |i: &usize| self.slots[*i].down_until_ms.load(Ordering::Relaxed) <= now;
                let order = (0..n).map(|k| (turn + k) % n);
                let candidates: Vec<usize> = order.clone().filter(up).collect();
                let pool = if candidates.is_empty() {
                    order.collect()
                } else {
                    candidates
                };
                pool.into_iter()
                    .min_by_key(|&i| self.slots[i].in_flight.load(Ordering::Relaxed))
                    .unwrap_or(0)
            }
        };
        i as u16
    }

    /// A request to endpoint `i` starts.
    pub fn begin(&self, i: u16) {
        self.slot(i).in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A request to endpoint `i` ended; `connect_failed` when its connection failed before any answer.
    pub fn end(&self, i: u16, connect_failed: bool) {
        let slot = self.slot(i);
        slot.in_flight.fetch_sub(1, Ordering::Relaxed);
        if connect_failed {
            let until = self.now_ms() + DOWN_FOR.as_millis() as u64;
            slot.down_until_ms.store(until, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(n: usize, strategy: UrlStrategy) -> Endpoints {
        let pools = (0..n)
            .map(|i| {
                let url = reqwest::Url::parse(&format!(
                    "http://127.0.0.1:{}/v1/chat/completions",
                    1000 + i
                ))
                .unwrap();
                let ep =
                    http1::Endpoint::new(&url, &[], Some(Duration::from_secs(1)), None).unwrap();
                (http1::Pool::new(ep, 1), url)
            })
            .collect();
        Endpoints::new(pools, Some(strategy))
    }

    #[test]
    fn round_robin_turns_and_least_inflight_avoids_busy_and_failed_endpoints() {
        let rr = endpoints(3, UrlStrategy::RoundRobin);
        assert_eq!(
            (0..5).map(|_| rr.pick()).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1]
        );
        let li = endpoints(2, UrlStrategy::LeastInflight);
        li.begin(0);
        li.begin(0);
        assert_eq!(li.pick(), 1);
        li.begin(1);
        assert_eq!(li.pick(), 1, "1 in flight against 2");
        li.end(1, true);
        assert_eq!(li.pick(), 0, "1 failed: left out while 0 is up");
        let r = endpoints(4, UrlStrategy::Random);
        let picks: std::collections::BTreeSet<u16> = (0..200).map(|_| r.pick()).collect();
        assert_eq!(picks.len(), 4);
    }
}
