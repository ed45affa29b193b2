//! One error type for a whole invocation, and the one place that maps it to an exit code (the table in
//! docs/reliability.md#exit-codes): usage errors (a flag value or combination that cannot run, input that
//! cannot be used) exit 2, runtime failures exit 1, `llmperf compare` finding a gated regression exits 3,
//! an invocation whose measured requests all failed exits 4 (its files are written as usual), a run
//! stopped by a signal exits 128 + signal (130 for Ctrl-C, 143 for SIGTERM).
//!
//! Usage errors are found as early as they can be known (the plan, the output folder, the tokenizer and
//! the dataset), always before the output folder is created.

/// A usage error: a flag value or combination that cannot run. Its message names the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Everything that can end an invocation other than success.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag value or combination that cannot run, or input that cannot be used. Exit code 2.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// clap's own outcome: a parse error (exit 2), or `--help` / `--version` (exit 0).
    #[error(transparent)]
    Cli(#[from] clap::Error),
    /// A failure while running. Exit code 1.
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
    /// Requests were measured and none of them succeeded, in any run of the invocation (the files are
    /// written as usual). Exit code 4.
    #[error("no request succeeded: all {requests} measured requests of {runs} run(s) failed (the first error of each kind is in the summary above, every error in the `error` column of each run's database)")]
    NothingSucceeded {
        /// Requests measured (all failed).
        requests: u64,
        /// Runs finished.
        runs: u64,
    },
    /// `llmperf compare --fail-on`: a gated metric regressed beyond its threshold (the comparison is
    /// written). Exit code 3.
    #[error("gated regression: {count} gate(s) failed: {gates}")]
    Regression {
        /// The failing gates and points.
        gates: String,
        /// How many.
        count: usize,
    },
    /// Stopped by a signal (the run's files are written, marked interrupted). Exit code 128 + signal.
    #[error("interrupted by signal {signal}")]
    Interrupted {
        /// The signal number (2 for SIGINT, 15 for SIGTERM).
        signal: i32,
    },
}

/// Exit code for usage errors (bad flags or input).
pub const EXIT_USAGE: i32 = 2;
/// Exit code for runtime failures.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code when no measured request of the invocation succeeded.
pub const EXIT_NOTHING_SUCCEEDED: i32 = 4;
/// Exit code of `llmperf compare` for a gated regression.
pub const EXIT_REGRESSION: i32 = 3;

impl Error {
    /// A usage error with `message` (which names the flag).
    pub fn usage(message: impl std::fmt::Display) -> Error {
        Error::Usage(UsageError(message.to_string()))
    }

    /// The process exit code: the one mapping from outcome to code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::Cli(e) if !e.use_stderr() => 0,
            Error::Cli(_) => EXIT_USAGE,
            Error::Runtime(_) => EXIT_FAILURE,
            Error::NothingSucceeded { .. } => EXIT_NOTHING_SUCCEEDED,
            Error::Regression { .. } => EXIT_REGRESSION,
            Error::Interrupted { signal } => 128 + signal,
        }
    }

    /// Shows the error to the user: usage errors on stderr, runtime failures through the log (so they also
    /// reach `benchmark.log`), clap's output as clap formats it; an interruption needs no message.
    pub fn report(&self) {
        match self {
            Error::Usage(e) => eprintln!("error: {e}"),
            Error::Cli(e) => {
                let _ = e.print();
            }
            // Through the log when one is set up (the flat run), else straight to stderr (subcommands).
            Error::Runtime(e) if tracing::dispatcher::has_been_set() => tracing::error!("{e:#}"),
            Error::Runtime(e) => eprintln!("error: {e:#}"),
            Error::NothingSucceeded { .. } if tracing::dispatcher::has_been_set() => {
                tracing::error!("{self}")
            }
            Error::NothingSucceeded { .. } => eprintln!("error: {self}"),
            Error::Regression { .. } => eprintln!("{self}"),
            Error::Interrupted { .. } => {}
        }
    }
}

/// The exit code of `result`: 0 on success, else [`Error::exit_code`] (after reporting the error).
pub fn exit_code(result: Result<(), Error>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            e.report();
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probe {
        #[arg(long)]
        n: u32,
    }

    #[test]
    fn one_mapping_from_error_to_exit_code() {
        assert_eq!(Error::usage("--x: bad").exit_code(), 2);
        assert_eq!(Error::Runtime(anyhow::anyhow!("boom")).exit_code(), 1);
        let none = Error::NothingSucceeded {
            requests: 3,
            runs: 1,
        };
        assert_eq!(none.exit_code(), 4);
        let regression = Error::Regression {
            gates: "p99_ttft:+10% at parallel 1, number 10".into(),
            count: 1,
        };
        assert_eq!(regression.exit_code(), 3);
        assert_eq!(Error::Interrupted { signal: 2 }.exit_code(), 130);
        assert_eq!(Error::Interrupted { signal: 15 }.exit_code(), 143);
        let bad = Probe::try_parse_from(["p", "--n", "x"]).unwrap_err();
        assert_eq!(Error::from(bad).exit_code(), 2);
        let help = Probe::try_parse_from(["p", "--help"]).unwrap_err();
        assert_eq!(Error::from(help).exit_code(), 0);
        assert_eq!(exit_code(Ok(())), 0);
    }

    #[test]
    fn usage_message_is_shown_as_given() {
        assert_eq!(
            Error::usage("--rate 0: must be > 0").to_string(),
            "--rate 0: must be > 0"
        );
    }
}
