//! Which shard of a sharded plan this process is (`--shard K/N|auto`, `--shard-count`, `--start-at`),
//! resolved at plan time against the validated runs: K and N (from the flag, Slurm's job array or a
//! Kubernetes Indexed Job), the plan fingerprint every shard agrees on, and its share of requests and
//! slots (its run root is [`crate::run_folder::RunRoot::of`] the plan). What a shard does at run time (the split, the synchronised start, the
//! record in the run's arguments file) is in [`crate::shard`].

use serde_json::Value;

use super::RunPlan;
use crate::cli::shard::{ShardArg, ShardArgs};
use crate::error::UsageError;

/// Keys of the run's arguments file that do not change the plan (where results go, logging) and so are left
/// out of the fingerprint.
const NOT_PLAN_KEYS: [&str; 12] = [
    "outputs_dir",
    "name",
    "alias",
    "no_timestamp",
    "debug",
    "log_every_n_query",
    "enable_progress_tracker",
    "db_commit_interval",
    "visualizer",
    "wandb_api_key",
    "swanlab_api_key",
    "swanlab_host",
];

/// Where this process sits in a sharded plan. Present with `--shard` or `--start-at` (alone: shard 0/1).
#[derive(Debug, Clone, PartialEq)]
pub struct Sharding {
    /// K, 0-based.
    pub index: u32,
    /// N.
    pub count: u32,
    /// Where K and N came from: `flag`, `slurm` or `kubernetes`.
    pub source: &'static str,
    /// `--start-at`: when the first run's measured schedule starts.
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Hash of every plan-defining argument of every run (hex).
    pub fingerprint: String,
    /// The seed every shard uses when `--seed` is not given (from the fingerprint).
    pub seed: u64,
}

impl Sharding {
    /// More than one shard: the plan is split.
    pub fn is_split(&self) -> bool {
        self.count > 1
    }

    /// `K/N`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

fn env_u32(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Result<Option<u32>, UsageError> {
    match env(key) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => {
            v.trim().parse().map(Some).map_err(|_| {
                UsageError(format!("--shard auto: ${key}={v:?} is not a whole number"))
            })
        }
    }
}

/// K, N and their source for `--shard auto`, from the scheduler's environment.
fn auto_shard(
    count_flag: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(u32, u32, &'static str), UsageError> {
    let count_fallback = || -> Result<Option<u32>, UsageError> {
        match count_flag {
            Some(n) => Ok(Some(n)),
            None => env_u32(env, "LLMPERF_SHARDS"),
        }
    };
    if let Some(id) = env_u32(env, "SLURM_ARRAY_TASK_ID")? {
        let min = env_u32(env, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let count = match env_u32(env, "SLURM_ARRAY_TASK_COUNT")? {
            Some(n) => n,
            None => count_fallback()?.ok_or_else(|| UsageError("--shard auto: $SLURM_ARRAY_TASK_ID is set but not $SLURM_ARRAY_TASK_COUNT; give --shard-count N".to_string()))?,
        };
        let index = id.checked_sub(min).ok_or_else(|| {
            UsageError({
                format!(
                    "--shard auto: $SLURM_ARRAY_TASK_ID={id} is below $SLURM_ARRAY_TASK_MIN={min}"
                )
            })
        })?;
        return Ok((index, count, "slurm"));
    }
    if let Some(index) = env_u32(env, "JOB_COMPLETION_INDEX")? {
        let count = count_fallback()?.ok_or_else(|| UsageError("--shard auto: $JOB_COMPLETION_INDEX names the shard but not how many there are: give --shard-count N or set $LLMPERF_SHARDS (the Job's completions)".to_string()))?;
        return Ok((index, count, "kubernetes"));
    }
    Err(UsageError("--shard auto: cannot tell which shard this is: neither $SLURM_ARRAY_TASK_ID (Slurm job array) nor $JOB_COMPLETION_INDEX (Kubernetes Indexed Job) is set; use --shard K/N".to_string()))
}

/// Resolves the sharding flags against the validated plan (usage errors name the flag). `env` reads an
/// environment variable.
pub fn resolve(
    plan: &RunPlan,
    flags: &ShardArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Sharding>, UsageError> {
    let (index, count, source) = match flags.shard {
        None if flags.shard_count.is_some() => {
            return Err(UsageError(
                "--shard-count is the shard count for --shard auto: add --shard auto".into(),
            ))
        }
        None if flags.start_at.is_none() => return Ok(None),
        None => (0, 1, "flag"),
        Some(ShardArg::Explicit { index, count }) => {
            if let Some(n) = flags.shard_count.filter(|&n| n != count) {
                return Err(UsageError(format!(
                    "--shard-count {n} contradicts --shard {index}/{count}: drop --shard-count"
                )));
            }
            (index, count, "flag")
        }
        Some(ShardArg::Auto) => auto_shard(flags.shard_count, env)?,
    };
    if count == 0 {
        return Err(UsageError("--shard auto: the shard count is 0".to_string()));
    }
    if index >= count {
        return Err(UsageError(format!(
            "--shard auto: shard index {index} is not below the shard count {count} (a job array must number its tasks 0..N-1, or from $SLURM_ARRAY_TASK_MIN, without gaps)"
        )));
    }
    for run in &plan.runs {
        if run.number < u64::from(count) {
            return Err(UsageError(format!(
                "--number {} is smaller than the {count} shards of --shard: shard {} would send nothing",
                run.number,
                count - 1
            )));
        }
        match run.load.parallel() {
            Some(p) if p.get() < count as usize => {
                return Err(UsageError(format!(
                    "--parallel {p} across {count} shards (--shard) leaves shard {} with 0 slots: use at most {p} shards or a larger --parallel",
                    count - 1,
                )));
            }
            _ => {}
        }
    }
    let fingerprint = fingerprint(plan);
    let seed = u64::from_str_radix(&fingerprint, 16).unwrap_or(0);
    Ok(Some(Sharding {
        index,
        count,
        source,
        start_at: flags.start_at,
        fingerprint,
        seed,
    }))
}

/// Shard `index`'s share of `parallel` slots among `count` shards: the remainder goes to the first shards.
pub fn slots(parallel: u64, index: u32, count: u32) -> u64 {
    let (k, n) = (u64::from(index), u64::from(count));
    parallel / n + u64::from(k < parallel % n)
}

/// This process's share of `n` measured requests or closed-loop slots (all of them without sharding).
pub fn share(sharding: Option<&Sharding>, number: u64) -> u64 {
    sharding.map_or(number, |s| slots(number, s.index, s.count))
}

/// 64-bit FNV-1a (stable across builds and machines; not a security hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The plan fingerprint: a hash of the run's arguments file of every run without the keys that only say
/// where results go or how much is logged ([`NOT_PLAN_KEYS`]).
pub fn fingerprint(plan: &RunPlan) -> String {
    let runs: Vec<Value> = plan
        .runs
        .iter()
        .map(|run| {
            let mut args = super::args::args_json(plan, run, plan.url.as_str(), "");
            for key in NOT_PLAN_KEYS {
                args.remove(key);
            }
            Value::Object(args)
        })
        .collect();
    let text = serde_json::to_string(&runs).unwrap_or_default();
    format!("{:016x}", fnv1a(text.as_bytes()))
}
