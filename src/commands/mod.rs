//! Subcommands: `llmperf <name> …` runs the subcommand `name` when argv[1] is one of [`SUBCOMMANDS`];
//! anything else is the flat evalscope command line (`llmperf --url …`), which stays the default.
//!
//! Adding a subcommand is a local change: a file here with its clap struct and a `run` function, and one
//! entry in [`SUBCOMMANDS`].

mod compare;
mod completions;
mod man;
mod merge;
mod serve_mock;

use std::ffi::OsString;

use clap::CommandFactory;

use crate::error::Error;

/// One subcommand.
pub struct Subcommand {
    /// The word after `llmperf`.
    pub name: &'static str,
    /// Its clap definition (for its help, shell completion and the man page).
    pub command: fn() -> clap::Command,
    /// Runs it on its own argv (its name first).
    pub run: fn(Vec<OsString>) -> Result<(), Error>,
}

/// Every subcommand.
pub const SUBCOMMANDS: &[Subcommand] = &[
    compare::COMMAND,
    completions::COMMAND,
    man::COMMAND,
    merge::COMMAND,
    serve_mock::COMMAND,
];

/// The subcommand `args` (argv, program name first) names, if any.
pub fn find(args: &[OsString]) -> Option<&'static Subcommand> {
    let first = args.get(1)?.to_str()?;
    SUBCOMMANDS.iter().find(|s| s.name == first)
}

/// The flat command line with every subcommand added: what completion scripts and the man page describe.
pub fn full_command() -> clap::Command {
    SUBCOMMANDS
        .iter()
        .fold(crate::cli::Cli::command(), |cmd, s| {
            cmd.subcommand((s.command)().name(s.name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommands_are_found_by_the_first_word_only() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            find(&argv(&["llmperf", "completions", "bash"])).map(|s| s.name),
            Some("completions")
        );
        assert!(find(&argv(&["llmperf", "--url", "completions"])).is_none());
        assert!(find(&argv(&["llmperf"])).is_none());
    }

    #[test]
    fn full_command_is_consistent() {
        full_command().debug_assert();
    }
}
