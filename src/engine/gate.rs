//! The gate between a run's warmup and its first measured request: the dispatcher reports that the
//! warmup has drained (every warmup request finished) and waits for the runner's word before sending the
//! first measured request — the moment to reset the server's prefix cache or start its profiler.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// What the first pass takes: the signal that the gate was reached, and the keeper's word.
type Pending = (oneshot::Sender<()>, oneshot::Receiver<bool>);

/// The dispatcher's side: passed once, before the first measured request.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    inner: Arc<Mutex<Option<Pending>>>,
    /// The keeper's word once given: 0 not yet, 1 open, 2 shut.
    word: Arc<AtomicU8>,
}

/// The runner's side: learns that the warmup drained, then lets the measured requests go (or not).
#[derive(Debug)]
pub struct GateKeeper {
    /// Fires when the dispatcher reached the gate; closed when it ended without reaching it.
    pub reached: oneshot::Receiver<()>,
    /// `true`: go on; `false` (or dropped): send no measured request.
    pub open: oneshot::Sender<bool>,
}

impl Gate {
    /// A gate and its keeper.
    pub fn new() -> (Gate, GateKeeper) {
        let (reached_tx, reached) = oneshot::channel();
        let (open, open_rx) = oneshot::channel();
        let gate = Gate {
            inner: Arc::new(Mutex::new(Some((reached_tx, open_rx)))),
            word: Arc::default(),
        };
        (gate, GateKeeper { reached, open })
    }

    /// Reports the gate reached (the first call only) and waits for the keeper: whether to send the
    /// measured requests. Later calls return the same word at once (the caller holds its feed while the
    /// first waits, so none comes before the word).
    pub async fn pass(&self) -> bool {
        let taken = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((reached, open)) = taken else {
            return self.word.load(Ordering::Acquire) == 1;
        };
        let _ = reached.send(());
        let go = open.await.unwrap_or(false);
        self.word.store(if go { 1 } else { 2 }, Ordering::Release);
        go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_keepers_word_holds_for_every_later_pass() {
        let (gate, keeper) = Gate::new();
        let g = gate.clone();
        let first = tokio::spawn(async move { g.pass().await });
        keeper.reached.await.unwrap();
        keeper.open.send(false).unwrap();
        assert!(!first.await.unwrap());
        assert!(!gate.pass().await, "a shut gate stays shut");
        let (gate, keeper) = Gate::new();
        drop(keeper);
        assert!(!gate.pass().await, "no keeper: no measured request");
    }
}
