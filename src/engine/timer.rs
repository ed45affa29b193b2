//! Waiting for an absolute deadline with microsecond precision and without burning a core.
//!
//! Tokio's timer wheel has 1 ms granularity (a sleep ends up to a millisecond late). On Linux a
//! [`PreciseTimer`] arms a `timerfd` (nanosecond, absolute `CLOCK_MONOTONIC`, the clock `Instant` reads)
//! registered with the runtime's reactor: the worker sleeps in `epoll_wait` until the kernel's
//! high-resolution timer fires, then the task runs. It is armed [`EARLY`] before the deadline and the task
//! yields until the deadline itself has passed, which absorbs most of the wake-up latency at the cost of
//! at most `EARLY` of spinning per wait. Elsewhere (or if a `timerfd` cannot be made) it falls back to the
//! runtime's timer up to `FALLBACK_SPIN` before the deadline, then yields until it.

use std::time::{Duration, Instant};

/// How long before the deadline the `timerfd` fires; the rest is spent yielding.
pub const EARLY: Duration = Duration::from_micros(50);

/// Without a `timerfd`: how long before the deadline the runtime's (1 ms) timer hands over to yielding.
const FALLBACK_SPIN: Duration = Duration::from_micros(1500);

/// A reusable precise timer (one per dispatcher).
pub struct PreciseTimer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl PreciseTimer {
    /// A timer; must be created inside a tokio runtime.
    pub fn new() -> PreciseTimer {
        PreciseTimer {
            #[cfg(target_os = "linux")]
            fd: crate::sys::timerfd::timerfd(),
        }
    }

    /// Returns at `deadline` or just after it, never before.
    pub async fn sleep_until(&mut self, deadline: Instant) {
        let now = Instant::now();
        if deadline <= now {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            let wake = deadline.checked_sub(EARLY).unwrap_or(deadline);
            if wake > now
                && crate::sys::timerfd::wait(fd, crate::clock::secs(wake))
                    .await
                    .is_err()
            {
                // A failing timerfd: use the runtime's timer from now on.
                self.fd = None;
                return fallback_sleep_until(deadline).await;
            }
            return spin_until(deadline).await;
        }
        fallback_sleep_until(deadline).await
    }
}

impl Default for PreciseTimer {
    fn default() -> Self {
        Self::new()
    }
}

async fn fallback_sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now + FALLBACK_SPIN {
        tokio::time::sleep_until((deadline - FALLBACK_SPIN).into()).await;
    }
    spin_until(deadline).await;
}

/// Yields to other tasks until `deadline` has passed.
async fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn never_wakes_early_and_handles_the_past() {
        let mut t = PreciseTimer::new();
        for ms in [0u64, 1, 3] {
            let deadline = Instant::now() + Duration::from_millis(ms);
            t.sleep_until(deadline).await;
            assert!(Instant::now() >= deadline);
        }
        let past = Instant::now() - Duration::from_millis(5);
        t.sleep_until(past).await;
    }

    #[tokio::test(flavor = "current_thread")]
    async fn fallback_never_wakes_early() {
        let deadline = Instant::now() + Duration::from_millis(3);
        fallback_sleep_until(deadline).await;
        assert!(Instant::now() >= deadline);
    }
}
