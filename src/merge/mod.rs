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

use crate::error::Error;

/// Merge the results of `llmperf --shard K/N` runs into one run root, as one process would have written
/// it: the database (every shard's rows on one wall-clock time base, with shard_index and shard_host
/// columns), the summary, percentile and workload files, and the text and HTML reports,
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

/// Runs `llmperf merge` on its argv (`merge` first). Every check failure is a usage error (exit 2) found
/// before anything is written; a failure while writing is a runtime error (exit 1).
pub fn run(argv: Vec<std::ffi::OsString>) -> Result<(), Error> {
    let args = MergeArgs::try_parse_from(argv)?;
    crate::clock::init();
    crate::logging::init(false);
    let plan = discover::find_shards(&args.dirs)
        .and_then(|roots| discover::check(roots, args.allow_missing))
        .and_then(|set| write::target(&args, set))
        .map_err(Error::Usage)?;
    // The log file stays open: an error is reported after this returns and reaches benchmark.log too.
    write::merge(&plan).map_err(Error::Runtime)
}
