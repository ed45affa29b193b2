//! The simulator's capacity model: a server whose limit is known, so a capacity search can be checked
//! against the right answer.
//!
//! * **Batch** (`max_batch` N > 0): at most N generation requests are served at once; the others wait in
//!   arrival order (a fair FIFO semaphore) and their wait counts in TTFT. A request's slot is freed when
//!   its response ends (or its client leaves).
//! * **Prefill** (`prefill_tok_per_s` P > 0): once admitted, a prompt of `p` tokens is prefilled by one
//!   FIFO prefill stage at P tokens/s (one prompt at a time), so its first token comes
//!   `wait_for_the_stage + p / P + ttft` after admission.
//! * **Decode** (`decode_tok_per_s` D > 0): the decode throughput is shared by the requests being served:
//!   the gap before each next token is `max(itl, B / D)`, B = requests admitted whose last token has not
//!   been produced, counted at the moment the previous token was produced.
//!
//! With only `max_batch`, a request's timing once admitted is the plain `ttft` / `itl` timeline.
//! Embeddings and rerank requests are not limited.
//!
//! # Closed-form knees (documented in the README's capacity-planning section)
//! Let `n` be the output tokens per request and `S = ttft + (n − 1) · itl` a request's service time.
//! * Batch N only, closed loop with `c` clients, SLO on p99 TTFT `L` with `ttft ≤ L < ttft + S`: for
//!   `c ≤ N` nobody waits (TTFT = ttft); for `c > N` a share `(c − N)/c` of the requests waits a whole
//!   service time, so p99 TTFT ≥ ttft + S > L as soon as that share exceeds 1 %. **Knee: c = N.**
//! * Decode D only, closed loop with `c` clients: B = c, so TPOT = max(itl, c / D). SLO avg TPOT ≤ X
//!   (seconds): **knee: c = ⌊X · D⌋** (pick X · D off an integer to keep a margin).
//! * Decode D only, Poisson arrivals at λ req/s (`--sla-variable rate`): a request sees itself plus, on
//!   average, λ · T others (T its time in the server: ttft + (n − 1) · TPOT), so
//!   TPOT = (1 + λ · ttft) / (D − λ (n − 1)). SLO avg TPOT ≤ X: **knee: λ = (X · D − 1) / (ttft + (n − 1) X)**.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The shared state of the capacity model.
#[derive(Debug)]
pub(crate) struct Capacity {
    slots: Option<Arc<Semaphore>>,
    prefill_tok_per_s: u64,
    decode_tok_per_s: u64,
    /// When the prefill stage is free again.
    prefill_free_at: Mutex<Option<Instant>>,
    /// Requests admitted and not finished.
    serving: Arc<AtomicUsize>,
}

/// One admitted request: holds its batch slot (and its place in the served count) until dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    _permit: Option<OwnedSemaphorePermit>,
    serving: Arc<AtomicUsize>,
    /// When the request got its slot.
    pub admitted: Instant,
    /// Time from admission until its prompt is prefilled (zero without a prefill rate).
    pub prefill: Duration,
    /// It no longer counts as served (its last token was produced).
    finished: AtomicBool,
}

impl Admission {
    /// The request's last token was produced: it stops sharing the decode throughput (its batch slot is
    /// freed when the response ends).
    pub(crate) fn finish(&self) {
        if !self.finished.swap(true, Ordering::AcqRel) {
            self.serving.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Capacity {
    /// The model for these settings (0 = unlimited for each).
    pub(crate) fn new(max_batch: u32, prefill_tok_per_s: u64, decode_tok_per_s: u64) -> Capacity {
        Capacity {
            slots: (max_batch > 0).then(|| Arc::new(Semaphore::new(max_batch as usize))),
            prefill_tok_per_s,
            decode_tok_per_s,
            prefill_free_at: Mutex::new(None),
            serving: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Whether any limit is set (otherwise requests are never held).
    pub(crate) fn limited(&self) -> bool {
        self.slots.is_some() || self.prefill_tok_per_s > 0 || self.decode_tok_per_s > 0
    }

    /// Whether the decode throughput is shared (token gaps depend on the load).
    pub(crate) fn shares_decode(&self) -> bool {
        self.decode_tok_per_s > 0
    }

    /// Waits for a batch slot (in arrival order), then books the prompt's prefill.
    pub(crate) async fn admit(&self, prompt_tokens: u64) -> Admission {
        let permit = match &self.slots {
            // The semaphore is never closed.
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        let admitted = Instant::now();
        self.serving.fetch_add(1, Ordering::AcqRel);
        let prefill = if self.prefill_tok_per_s > 0 {
            let work =
                Duration::from_secs_f64(prompt_tokens as f64 / self.prefill_tok_per_s as f64);
            let mut free = self
                .prefill_free_at
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let start = free.map_or(admitted, |f| f.max(admitted));
            let done = start + work;
            *free = Some(done);
            done - admitted
        } else {
            Duration::ZERO
        };
        Admission {
            _permit: permit,
            serving: self.serving.clone(),
            admitted,
            prefill,
            finished: AtomicBool::new(false),
        }
    }

    /// The gap before a request's next token, now: `max(itl, served / D)`.
    pub(crate) fn token_gap(&self, itl: Duration) -> Duration {
        if self.decode_tok_per_s == 0 {
            return itl;
        }
        let served = self.serving.load(Ordering::Acquire).max(1);
        itl.max(Duration::from_secs_f64(
            served as f64 / self.decode_tok_per_s as f64,
        ))
    }
}

/// A request's pacing under the capacity model: its admission (released when the response ends) and
/// the model that spaces its tokens.
#[derive(Debug, Clone)]
pub(crate) struct Pace {
    pub(crate) capacity: Arc<Capacity>,
    pub(crate) admission: Arc<Admission>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn batch_slots_are_fifo_and_released_on_drop() {
        let cap = Arc::new(Capacity::new(2, 0, 0));
        let a = cap.admit(10).await;
        let b = cap.admit(10).await;
        let cap2 = cap.clone();
        let waiter = tokio::spawn(async move { cap2.admit(10).await.admitted });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiter.is_finished(), "a third request waits for a slot");
        let freed = Instant::now();
        drop(a);
        let admitted = waiter.await.unwrap();
        assert!(admitted >= freed);
        drop(b);
        assert_eq!(cap.serving.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn prefill_stage_is_serial_and_decode_gap_grows_with_load() {
        let cap = Capacity::new(0, 1000, 100);
        let a = cap.admit(100).await;
        let b = cap.admit(100).await;
        assert_eq!(a.prefill, Duration::from_millis(100));
        // The second prompt's prefill starts when the first one's ends, however long after the first it
        // was admitted (a loaded machine may pause this test between the two).
        assert_eq!(
            b.admitted + b.prefill,
            a.admitted + a.prefill + Duration::from_millis(100)
        );
        // Two served at 100 tok/s shared: 20 ms per token each (above the 5 ms floor).
        let gap = cap.token_gap(Duration::from_millis(5));
        assert!((gap.as_secs_f64() - 0.02).abs() < 1e-9);
        drop(a);
        let gap = cap.token_gap(Duration::from_millis(5));
        assert!((gap.as_secs_f64() - 0.01).abs() < 1e-9);
        drop(b);
        assert_eq!(
            cap.token_gap(Duration::from_millis(5)),
            Duration::from_millis(10)
        );
    }
}
