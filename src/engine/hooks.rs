//! Test hooks: environment variables that slow the client down on purpose, so the tests can see how a
//! starved client shows up (send lag, read lag, the client-limited warning). They exist only with the
//! cargo feature `test-hooks`, which the test suites enable through the crate's dev-dependency on itself;
//! a normal build (`cargo build`, `cargo install`) compiles every hook to nothing.

#[cfg(feature = "test-hooks")]
use std::time::Duration;

/// Burn this many microseconds of CPU right before each request is sent.
pub const INJECT_WORK_ENV: &str = "LLMPERF_INJECT_CLIENT_WORK_US";

/// Sleep this many microseconds (blocking the connection's thread) before every read of a response.
pub const INJECT_READ_DELAY_ENV: &str = "LLMPERF_INJECT_READ_DELAY_US";

/// The hooks in force, read from the environment once per client.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hooks {
    #[cfg(feature = "test-hooks")]
    work: Option<Duration>,
    #[cfg(feature = "test-hooks")]
    read_delay: Option<Duration>,
}

#[cfg(feature = "test-hooks")]
fn micros(var: &str) -> Option<Duration> {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|us| *us > 0)
        .map(Duration::from_micros)
}

impl Hooks {
    /// The hooks the environment asks for (none without the `test-hooks` feature).
    pub fn from_env() -> Hooks {
        Hooks {
            #[cfg(feature = "test-hooks")]
            work: micros(INJECT_WORK_ENV),
            #[cfg(feature = "test-hooks")]
            read_delay: micros(INJECT_READ_DELAY_ENV),
        }
    }

    /// Before a send: spins for the injected client work, if any.
    #[inline]
    pub fn before_send(&self) {
        #[cfg(feature = "test-hooks")]
        if let Some(work) = self.work {
            let until = std::time::Instant::now() + work;
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }

    /// Before a read: blocks the thread for the injected read delay, if any.
    #[inline]
    pub fn before_read(&self) {
        #[cfg(feature = "test-hooks")]
        if let Some(delay) = self.read_delay {
            std::thread::sleep(delay);
        }
    }
}
