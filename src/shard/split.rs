//! The plan split: which of a run's prepared requests this shard sends, with how many slots, and at which
//! offsets of the one global schedule.

use crate::engine::schedule::{seeded_offsets_s, ArrivalShape};
use crate::engine::PreparedRequest;
use crate::plan::{LoadMode, RunSpec};

use crate::plan::sharding::{slots, Sharding};

/// What one shard sends in one run.
#[derive(Debug)]
pub struct ShardWork {
    /// Warmup first (all of the plan's warmup requests), then this shard's measured requests in global
    /// order.
    pub requests: Vec<PreparedRequest>,
    /// Intended prompt tokens, parallel to `requests`.
    pub intended: Vec<Option<u64>>,
    /// Concurrency cap of the dispatcher (closed loop: this shard's share of `--parallel`).
    pub parallel: usize,
    /// Closed loop: this shard's share of `--parallel`; open loop: −1.
    pub slots: i64,
    /// Measured requests this shard sends.
    pub measured: u64,
    /// The arrival offsets (seconds) of `requests` taken from the global schedule (open loop: of the
    /// measured ones); `None` when the engine's own schedule is the plan's (one shard, or no pacing).
    pub offsets_s: Option<Vec<f64>>,
}

/// Splits a run's prepared requests (`spec.warmup` warmup requests, then the measured ones in global
/// order) for `sharding`; `parallel` is the plan's dispatcher cap, `seed` and `shape` the run's schedule.
pub fn split(
    sharding: Option<&Sharding>,
    mode: LoadMode,
    spec: &RunSpec,
    (seed, shape): (u64, ArrivalShape),
    requests: Vec<PreparedRequest>,
    intended: Vec<Option<u64>>,
    parallel: usize,
) -> ShardWork {
    let warmup = (spec.warmup as usize).min(requests.len());
    let measured_total = requests.len() - warmup;
    let slots_of_plan = if mode == LoadMode::Closed {
        parallel as i64
    } else {
        -1
    };
    let Some(s) = sharding.filter(|s| s.is_split()) else {
        return ShardWork {
            requests,
            intended,
            parallel,
            slots: slots_of_plan,
            measured: measured_total as u64,
            offsets_s: None,
        };
    };
    let (k, n) = (s.index as usize, s.count as usize);
    let keep = |i: usize| i < warmup || (i - warmup) % n == k;
    let kept: Vec<usize> = (0..requests.len()).filter(|&i| keep(i)).collect();
    let offsets_s = match mode {
        LoadMode::Open => {
            let global = seeded_offsets_s(measured_total, spec.rate, shape, seed);
            Some(kept[warmup..].iter().map(|&i| global[i - warmup]).collect())
        }
        LoadMode::Closed if spec.rate > 0.0 => {
            let global = seeded_offsets_s(requests.len(), spec.rate, shape, seed);
            Some(kept.iter().map(|&i| global[i]).collect())
        }
        LoadMode::Closed => None,
    };
    let pick = |i: &usize| keep(*i);
    let intended = intended
        .into_iter()
        .enumerate()
        .filter(|(i, _)| pick(i))
        .map(|(_, v)| v)
        .collect();
    let requests: Vec<PreparedRequest> = requests
        .into_iter()
        .enumerate()
        .filter(|(i, _)| pick(i))
        .map(|(_, r)| r)
        .collect();
    let (parallel, slots) = match mode {
        LoadMode::Closed => {
            let share = slots(parallel as u64, s.index, s.count).max(1) as usize;
            (share, share as i64)
        }
        LoadMode::Open => (parallel, -1),
    };
    ShardWork {
        measured: (requests.len() - warmup) as u64,
        requests,
        intended,
        parallel,
        slots,
        offsets_s,
    }
}
