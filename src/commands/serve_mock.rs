//! `llmperf serve-mock`: the built-in simulator as a standalone server (see [`crate::sim::serve`]).

use clap::CommandFactory;

use super::Subcommand;

pub(super) const COMMAND: Subcommand = Subcommand {
    name: "serve-mock",
    command: <crate::sim::serve::ServeMockArgs as CommandFactory>::command,
    run: crate::sim::serve::run,
};
