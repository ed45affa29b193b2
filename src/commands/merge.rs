//! `llmperf merge DIR… --outputs-dir OUT`: merges the results of a sharded plan (see [`crate::merge`]).

use clap::CommandFactory;

use super::Subcommand;

pub(super) const COMMAND: Subcommand = Subcommand {
    name: "merge",
    command: <crate::merge::MergeArgs as CommandFactory>::command,
    run: crate::merge::run,
};
