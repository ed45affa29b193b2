//! Ctrl-C and SIGTERM: the first signal stops dispatching and gives requests in flight a grace period,
//! then abandons them; every completed record is kept and the run's files are written, marked interrupted.
//! A second signal flushes the database and exits at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

/// How long requests in flight may finish after the first signal.
pub const GRACE: Duration = Duration::from_secs(5);

const RUNNING: u8 = 0;
const STOPPING: u8 = 1;
const ABANDON: u8 = 2;

type FlushHook = Box<dyn Fn() + Send + Sync>;

/// Shared stop state; cheap to clone.
#[derive(Clone)]
pub struct Shutdown {
    state: watch::Sender<u8>,
    signal: Arc<Mutex<Option<i32>>>,
    flush_hook: Arc<Mutex<Option<FlushHook>>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A running state.
    pub fn new() -> Self {
        Shutdown {
            state: watch::Sender::new(RUNNING),
            signal: Arc::new(Mutex::new(None)),
            flush_hook: Arc::new(Mutex::new(None)),
        }
    }

    /// `true` once a stop was asked for.
    pub fn stopping(&self) -> bool {
        *self.state.borrow() >= STOPPING
    }

    /// The signal number that stopped the run, if any.
    pub fn signal(&self) -> Option<i32> {
        *self.signal.lock().expect("signal lock")
    }

    /// Exit code for an interrupted run: 128 + signal (130 for SIGINT, 143 for SIGTERM).
    pub fn exit_code(&self) -> Option<i32> {
        self.signal()
            .map(|signal| crate::error::Error::Interrupted { signal }.exit_code())
    }

    /// Asks for a stop (as the first signal does).
    pub fn request_stop(&self, signal: i32) {
        self.signal
            .lock()
            .expect("signal lock")
            .get_or_insert(signal);
        self.state.send_if_modified(|s| {
            if *s < STOPPING {
                *s = STOPPING;
                true
            } else {
                false
            }
        });
    }

    /// Abandons requests still in flight.
    pub fn abandon_in_flight(&self) {
        self.state.send_replace(ABANDON);
    }

    /// Resolves once a stop was asked for.
    pub async fn stopped(&self) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| *s >= STOPPING).await;
    }

    /// Resolves once requests in flight are to be abandoned.
    pub async fn abandoned(&self) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| *s >= ABANDON).await;
    }

    /// Sets what a second signal runs before exiting (commit the database).
    pub fn set_flush_hook(&self, hook: Option<FlushHook>) {
        *self.flush_hook.lock().expect("hook lock") = hook;
    }

    fn run_flush_hook(&self) {
        if let Some(hook) = self.flush_hook.lock().expect("hook lock").as_ref() {
            hook();
        }
    }

    /// Installs the SIGINT/SIGTERM handlers now and spawns the task that acts on them, for the rest of the
    /// process. Call inside a runtime context (`Runtime::enter`); returns `false` (after a warning) when
    /// the handlers cannot be installed.
    pub fn install_signal_handlers(&self) -> bool {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(int), Ok(term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!(
                "cannot install signal handlers; Ctrl-C will end the process without a summary"
            );
            return false;
        };
        tokio::spawn(self.clone().listen(int, term));
        true
    }

    async fn listen(
        self,
        mut int: tokio::signal::unix::Signal,
        mut term: tokio::signal::unix::Signal,
    ) {
        let mut count = 0;
        loop {
            let sig = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            count += 1;
            if count == 1 {
                self.request_stop(sig);
                tracing::warn!(
                    "Interrupted: no new requests are sent; requests in flight get {} s to finish, then the results are written. Press Ctrl-C again to exit at once.",
                    GRACE.as_secs()
                );
                let me = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(GRACE).await;
                    me.abandon_in_flight();
                });
            } else {
                self.run_flush_hook();
                eprintln!("Interrupted twice: exiting now; the database holds every request completed so far.");
                let signal = self.signal().unwrap_or(sig);
                std::process::exit(crate::error::Error::Interrupted { signal }.exit_code());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stop_then_abandon() {
        let s = Shutdown::new();
        assert!(!s.stopping());
        assert_eq!(s.exit_code(), None);
        s.request_stop(libc::SIGTERM);
        s.request_stop(libc::SIGINT);
        assert!(s.stopping());
        assert_eq!(
            s.exit_code(),
            Some(143),
            "the first signal decides the exit code"
        );
        s.stopped().await;
        s.abandon_in_flight();
        s.abandoned().await;
    }
}
