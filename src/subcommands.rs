//! Subcommands, recognised by the first argument before the flat `evalscope perf` flags are parsed:
//! `llmperf merge …` ([`crate::merge`]) and `llmperf serve-mock …` ([`crate::sim::serve`]).

use std::ffi::OsString;

/// Runs the subcommand named by `argv[1]`, if any, and returns its exit code; `None` for a plain run.
pub fn dispatch(argv: &[OsString]) -> Option<i32> {
    let rest = argv.get(2..).unwrap_or_default();
    match argv.get(1)?.to_str()? {
        "merge" => Some(crate::merge::main(rest)),
        "serve-mock" => Some(crate::sim::serve::main(rest)),
        _ => None,
    }
}
