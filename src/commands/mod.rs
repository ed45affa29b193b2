//! Subcommands: `llmperf <name> …` runs the subcommand `name` when argv[1] is one of [`SUBCOMMANDS`];
//! anything else is the flat evalscope command line (`llmperf --url …`), which stays the default. The flat
//! line is parsed with every subcommand attached ([`full_command`]), so `llmperf --help` lists them, and
//! clap's `help` subcommand (`llmperf help`, `llmperf help merge`) works like theirs.
//!
//! Adding a subcommand is a local change: a file here with its clap struct and a `run` function, and one
//! entry in [`SUBCOMMANDS`]; `--help`, `help`, the completion scripts and the man pages pick it up.

mod compare;
mod completions;
mod man;
mod merge;
mod serve_mock;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

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

/// Runs the subcommand `sub` on argv (program name first), its usage lines reading `llmperf <name>`.
pub fn run(sub: &Subcommand, args: &[OsString]) -> Result<(), Error> {
    let mut argv = args[1..].to_vec();
    argv[0] = OsString::from(format!("llmperf {}", sub.name));
    (sub.run)(argv)
}

/// The flat command line with every subcommand added: what `--help`, completion scripts and the man page
/// describe.
pub fn full_command() -> clap::Command {
    SUBCOMMANDS
        .iter()
        .fold(crate::cli::Cli::command(), |cmd, s| {
            cmd.subcommand((s.command)().name(s.name))
        })
}

/// clap's "unexpected argument" for a prefix of several flags (`--max`), said as argparse says it:
/// ambiguous, with the candidates; any other error as clap reports it.
fn ambiguous_or(e: clap::Error) -> Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            let cmd = crate::cli::Cli::command();
            if let Some(candidates) = crate::cli::compat::ambiguous_prefix(&cmd, arg) {
                return Error::usage(format!(
                    "{arg} is ambiguous: it could be {} (write more of the flag)",
                    candidates.join(", ")
                ));
            }
        }
    }
    e.into()
}

/// Parses the flat evalscope command line (argv, program name first). `--help` lists the subcommands;
/// `llmperf help [NAME]` prints a help page; a subcommand name anywhere but first is an error.
pub fn parse_flat(args: Vec<OsString>) -> Result<crate::cli::Cli, Error> {
    let matches = full_command()
        .try_get_matches_from(&args)
        .map_err(ambiguous_or)?;
    if let Some((name, _)) = matches.subcommand() {
        return Err(Error::usage(format!(
            "`{name}` is a subcommand: it must come first (`llmperf {name} …`); see `llmperf help {name}`"
        )));
    }
    let mut cli = crate::cli::Cli::from_arg_matches(&matches)?;
    cli.repeated_json_flags =
        crate::cli::compat::repeated_json_flags(&crate::cli::Cli::command(), &args);
    Ok(cli)
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
