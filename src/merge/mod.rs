//! `llmperf merge DIR… --outputs-dir OUT`: turns the run roots of a sharded plan into one evalscope-shaped
//! run root, recomputed exactly from the union of the rows (never by averaging the shards' statistics).
//!
//! Checks first (exit 2, nothing written): every folder holds shard results, all of one plan (fingerprint
//! and shard count), each shard once, every shard present and finished (unless `--allow-missing`, which
//! then lists them as `"Shards Missing"`), and the target root does not exist yet.

mod discover;
mod rows;
mod write;

use std::path::PathBuf;

use clap::Parser;

use crate::{EXIT_FAILURE, EXIT_USAGE};

/// Merge the results of `llmperf --shard K/N` runs into one run root, as one process would have written
/// it: benchmark_data.db (every shard's rows on one wall-clock time base, with shard_index and shard_host
/// columns), the summary, percentile and workload files, performance_summary.txt and perf_report.html,
/// all recomputed from the rows.
#[derive(Debug, Clone, Parser)]
#[command(name = "llmperf merge", max_term_width = 110)]
pub struct MergeArgs {
    /// Shard run roots, or folders holding them (searched a few levels deep), e.g. outputs/shards/*/.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Where the merged run root is created (as `<outputs-dir>/<name>`); an existing root is never
    /// overwritten.
    #[arg(long, default_value = "outputs")]
    pub outputs_dir: PathBuf,

    /// Name of the merged run root [default: the shards' name without its `_shard<K>of<N>` suffix].
    #[arg(long)]
    pub name: Option<String>,

    /// Merge even when shards are missing or failed; they are listed as "Shards Missing" in the summary
    /// and the report (the result then covers only part of the plan).
    #[arg(long)]
    pub allow_missing: bool,
}

/// Runs `llmperf merge` with the arguments after `merge`; returns the exit code.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args = match MergeArgs::try_parse_from(
        std::iter::once(std::ffi::OsString::from("llmperf merge")).chain(args.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { 0 };
        }
    };
    crate::clock::init();
    crate::logging::init(false);
    let plan = match discover::find_shards(&args.dirs)
        .and_then(|roots| discover::check(roots, args.allow_missing))
        .and_then(|set| write::target(&args, set))
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let code = match write::merge(&plan) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e:#}");
            EXIT_FAILURE
        }
    };
    crate::logging::close_log_file();
    code
}
