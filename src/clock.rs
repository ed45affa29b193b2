//! The one clock every timestamp uses: a monotonic clock read as seconds.
//!
//! Hot paths keep [`Instant`]s (cheap to read and compare); they become `f64` seconds only when stored.
//! The seconds are those of the system's `CLOCK_MONOTONIC` — the same clock Python's `time.perf_counter()`
//! reads on Linux — so `start_time`/`completed_time` in the run's database mean what evalscope's mean, and a
//! simulator in another process on the same machine can be joined against the client's stamps.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Base {
    instant: Instant,
    mono_s: f64,
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| Base {
        instant: Instant::now(),
        mono_s: crate::sys::monotonic_s(),
    })
}

/// Fixes the clock's origin; call once at start-up so later reads cost one `Instant::now()`.
pub fn init() {
    base();
}

/// Seconds on the monotonic clock for `at`.
pub fn secs(at: Instant) -> f64 {
    let b = base();
    if at >= b.instant {
        b.mono_s + (at - b.instant).as_secs_f64()
    } else {
        b.mono_s - (b.instant - at).as_secs_f64()
    }
}

/// Seconds on the monotonic clock now.
pub fn now_s() -> f64 {
    secs(Instant::now())
}

/// The [`Instant`] that corresponds to monotonic seconds `s` (inverse of [`secs`]).
pub fn instant_at(s: f64) -> Instant {
    let b = base();
    let delta = s - b.mono_s;
    if delta >= 0.0 {
        b.instant + Duration::from_secs_f64(delta)
    } else {
        b.instant - Duration::from_secs_f64(-delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secs_is_monotonic_and_round_trips() {
        init();
        let a = Instant::now();
        let b = a + Duration::from_millis(250);
        assert!((secs(b) - secs(a) - 0.25).abs() < 1e-9);
        let back = instant_at(secs(b));
        let diff = if back > b { back - b } else { b - back };
        assert!(diff < Duration::from_micros(1));
    }

    #[test]
    fn secs_tracks_the_system_monotonic_clock() {
        init();
        let ours = now_s();
        let system = crate::sys::monotonic_s();
        assert!((ours - system).abs() < 0.05, "ours={ours} system={system}");
    }
}
