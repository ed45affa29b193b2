//! The flags of a sharded run (`--shard`, `--shard-count`, `--start-at`), flattened into [`super::Cli`].
//! Raw values only; [`crate::shard`] resolves `auto` and checks them against the plan.

use clap::Args;

/// `--shard`: an explicit `K/N`, or `auto` (taken from the scheduler's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// Shard `index` of `count` (0-based).
    Explicit {
        /// `K`, 0 ≤ K < N.
        index: u32,
        /// `N` ≥ 1.
        count: u32,
    },
    /// From `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT`, or `JOB_COMPLETION_INDEX` and a count.
    Auto,
}

/// Parses `K/N` (0 ≤ K < N) or `auto`.
pub fn parse_shard(s: &str) -> Result<ShardArg, String> {
    if s.trim() == "auto" {
        return Ok(ShardArg::Auto);
    }
    let bad = || format!("{s:?} is not K/N (0-based shard K of N, e.g. 3/8) or auto");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(format!("{s:?}: the shard count N must be at least 1"));
    }
    if index >= count {
        return Err(format!(
            "{s:?}: the shard index K is 0-based and must be below N (0..={})",
            count - 1
        ));
    }
    Ok(ShardArg::Explicit { index, count })
}

/// Parses an RFC 3339 instant (`2026-12-01T10:00:00Z`, `2026-12-01T11:00:00.5+01:00`).
pub fn parse_start_at(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time such as 2026-12-01T10:00:00Z ({e})"))
}

/// Running one shard of a plan on many machines (see README "Running on many machines").
#[derive(Debug, Clone, Default, Args)]
pub struct ShardArgs {
    /// Run shard K of N (0-based) of the plan: every shard builds the same seeded plan and sends the
    /// measured requests whose index i satisfies i mod N = K; closed loop splits `--parallel` across the
    /// shards, open loop fires each request at its offset in the one global schedule. `auto` takes K and N
    /// from `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT`, or `JOB_COMPLETION_INDEX` (Kubernetes Indexed
    /// Job) with `--shard-count` or `$LLMPERF_SHARDS`. Combine the shards with `llmperf merge`.
    #[arg(long, value_name = "K/N|auto", value_parser = parse_shard, help_heading = "Sharding")]
    pub shard: Option<ShardArg>,

    /// The number of shards N for `--shard auto` when the environment names only the index
    /// (`JOB_COMPLETION_INDEX`); else `$LLMPERF_SHARDS`.
    #[arg(long, value_name = "N", help_heading = "Sharding")]
    pub shard_count: Option<u32>,

    /// Wall-clock instant (RFC 3339, e.g. 2026-12-01T10:00:00Z) at which the first run's measured
    /// schedule starts: bodies are prepared and the connection tested before, then the process sleeps
    /// until then, so shards on many machines start together (as well as their clocks agree).
    #[arg(long, value_name = "RFC3339", value_parser = parse_start_at, help_heading = "Sharding")]
    pub start_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_values() {
        assert_eq!(
            parse_shard("3/8"),
            Ok(ShardArg::Explicit { index: 3, count: 8 })
        );
        assert_eq!(parse_shard("auto"), Ok(ShardArg::Auto));
        assert!(parse_shard("8/8").unwrap_err().contains("below N"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("x").unwrap_err().contains("K/N"));
        assert!(parse_shard("-1/4").is_err());
    }

    #[test]
    fn start_at_values() {
        let t = parse_start_at("2026-12-01T11:00:00.5+01:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-12-01T10:00:00.500+00:00");
        assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
    }
}
