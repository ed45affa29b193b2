//! The plan split: which of a run's requests this shard sends (by global index), and with how many slots.
//! The requests themselves, and their offsets on the one global schedule, are produced lazily by the
//! runner ([`Pick`] says which to keep).

use crate::plan::RunSpec;

use crate::plan::sharding::{slots, Sharding};

/// Which requests of a run, by global index (warmup first, then the measured ones in global order), this
/// process sends: every warmup request, and the measured requests whose index i satisfies
/// i mod N = K.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// Requests of the whole plan's run, warmup included.
    pub len: usize,
    /// The first `warmup` of them are warmup requests (sent by every shard).
    pub warmup: usize,
    /// K.
    pub index: usize,
    /// N (1: every request).
    pub count: usize,
}

impl Pick {
    /// Every request of a run of `len` (the first `warmup` of them warmup).
    pub fn all(len: usize, warmup: usize) -> Pick {
        Pick {
            len,
            warmup: warmup.min(len),
            index: 0,
            count: 1,
        }
    }

    /// Whether this process sends request `i` (global index).
    pub fn keeps(&self, i: usize) -> bool {
        i < self.warmup || (i - self.warmup) % self.count == self.index
    }

    /// Measured requests this process sends.
    pub fn measured(&self) -> usize {
        let m = self.len - self.warmup;
        (m + self.count - 1 - self.index) / self.count
    }

    /// Requests this process sends, warmup included.
    pub fn kept(&self) -> usize {
        self.warmup + self.measured()
    }
}

/// What one shard sends in one run.
#[derive(Debug)]
pub struct ShardWork {
    /// Which of the run's requests it sends.
    pub pick: Pick,
    /// Concurrency cap of the dispatcher (closed loop: this shard's share of `--parallel`).
    pub parallel: usize,
    /// Closed loop: this shard's share of `--parallel`; `None` in open loop.
    pub slots: Option<usize>,
    /// Measured requests this shard sends.
    pub measured: u64,
}

/// Splits a run of `len` requests (`spec.warmup` warmup requests, then the measured ones in global order)
/// for `sharding`; `parallel` is the plan's dispatcher cap.
pub fn split(
    sharding: Option<&Sharding>,
    spec: &RunSpec,
    len: usize,
    parallel: usize,
) -> ShardWork {
    let mut pick = Pick::all(len, spec.warmup as usize);
    let closed = spec.load.parallel().is_some();
    let slots_of_plan = closed.then_some(parallel);
    let Some(s) = sharding.filter(|s| s.is_split()) else {
        return ShardWork {
            measured: pick.measured() as u64,
            pick,
            parallel,
            slots: slots_of_plan,
        };
    };
    pick.index = s.index as usize;
    pick.count = s.count as usize;
    let (parallel, slots) = if closed {
        let share = slots(parallel as u64, s.index, s.count).max(1) as usize;
        (share, Some(share))
    } else {
        (parallel, None)
    };
    ShardWork {
        measured: pick.measured() as u64,
        pick,
        parallel,
        slots,
    }
}
