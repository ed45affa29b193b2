//! Sharded runs: which part of the plan this shard sends, when it starts (`--start-at`), and what it
//! records so `llmperf merge` can rebuild the single-process result. Which shard this process is (and the
//! plan fingerprint) is settled at plan time, in [`crate::plan::sharding`].
//!
//! Every shard builds the same seeded plan (without `--seed`, the seed is derived from the plan
//! fingerprint, so all shards agree). Shard K sends the measured requests whose global index i satisfies
//! i mod N = K, so the union of the shards is exactly the plan. Closed loop splits `--parallel` (the
//! remainder to the first shards); open loop keeps the one global Poisson schedule and each shard fires its
//! requests at their global offsets. Warmup requests are sent by every shard, each for itself.

pub mod clock;
mod run;
mod split;

use serde_json::{json, Map, Value};

use crate::plan::sharding::Sharding;
pub use run::{begin, finish, ShardStart};
pub use split::{split, Pick, ShardWork};

/// The key of a run's arguments holding this process's shard record (after evalscope's keys).
pub const ARGS_KEY: &str = "llmperf_shard";

/// The shard record written into the run's arguments file before the run (`started` is `None`) and again
/// once it has started.
pub fn args_record(
    sharding: &Sharding,
    (measured, slots): (u64, Option<usize>),
    clock: &clock::ClockInfo,
    started: Option<&clock::StartInfo>,
) -> Value {
    let mut m = Map::new();
    m.insert("index".into(), json!(sharding.index));
    m.insert("count".into(), json!(sharding.count));
    m.insert("source".into(), json!(sharding.source));
    m.insert("plan_fingerprint".into(), json!(sharding.fingerprint));
    m.insert("requests".into(), json!(measured));
    // Open loop has no slots: −1, as evalscope writes an open loop's concurrency.
    m.insert("slots".into(), json!(slots.map_or(-1, |s| s as i64)));
    m.insert("host".into(), json!(clock.host));
    m.insert(
        "start_at".into(),
        json!(sharding.start_at.map(|t| t.to_rfc3339())),
    );
    m.insert("clock".into(), clock.to_json());
    if let Some(s) = started {
        m.insert("started_at".into(), json!(s.started_at_rfc3339()));
        m.insert("started_at_epoch_s".into(), json!(s.started_epoch_s));
        m.insert(
            "wall_minus_monotonic_s".into(),
            json!(s.wall_minus_monotonic_s),
        );
        m.insert("start_late_s".into(), json!(s.late_s));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests;
