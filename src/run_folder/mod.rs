//! The run folder: evalscope's output tree, owned in one place. [`RunRoot`] and [`RunDir`] name every
//! file and folder ([`layout`](mod@layout) is the only file that spells those names), write them
//! ([`write`](mod@write)) and read them back ([`read`](mod@read); the database's rows: [`rows`](mod@rows)). The runner, the SLA probes, AgentX,
//! `llmperf merge` and every later reader of results go through here.

mod layout;
mod read;
mod rows;
mod write;

pub use layout::{run_name, RunDir, RunRoot};
pub use read::find_runs;
pub use rows::StoredRow;
pub use write::RunResults;

use crate::plan::RunPlan;

impl RunRoot {
    /// The root of `plan`'s results: `--outputs-dir`, the timestamp folder (unless `--no-timestamp`),
    /// the name (`--name`, else the model's basename) with this shard's mark.
    pub fn of(plan: &RunPlan) -> RunRoot {
        let shard = plan.sharding.as_ref().map(|s| (s.index, s.count));
        RunRoot::compose(
            &plan.outputs.dir,
            plan.outputs.stamp.as_deref(),
            &plan.outputs.name,
            shard,
        )
    }

    /// Whether this root already holds a run that `plan` would overwrite (its log, or a run folder's
    /// database): a usage error, found before anything is loaded or written.
    pub fn check_free(&self, plan: &RunPlan) -> Result<(), crate::error::UsageError> {
        if self.log().exists() || plan.runs.iter().any(|r| self.run(r).has_database()) {
            return Err(crate::error::UsageError(format!(
                "The database file already exists under {}: choose another --name/--outputs-dir, or drop --no-timestamp",
                self.path().display()
            )));
        }
        Ok(())
    }
}
