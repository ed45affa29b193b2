//! `llmperf compare BASE NEW`: the verdict of a change (see [`crate::compare`]): the table on stdout (or
//! `--output`), `--junit`, and the exit code — 0 no gated regression, 3 a gated regression, 2 bad input
//! (nothing written), 1 a failure while writing.

use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, Parser};

use super::Subcommand;
use crate::compare::gate::Gate;
use crate::compare::render::{self, Format};
use crate::compare::{compare, CompareError};
use crate::error::Error;

pub(super) const COMMAND: Subcommand = Subcommand {
    name: "compare",
    command: <CompareArgs as CommandFactory>::command,
    run,
};

/// Compare two benchmark results and decide: per metric the change, its 95 % interval and a verdict
/// (improved, regressed, no significant change, inconclusive); with --fail-on, a CI gate. BASE and NEW are
/// run roots or run folders written by llmperf or by evalscope perf (sweeps are matched point by point).
///
/// Exit codes: 0 no gated regression, 3 a gated regression, 2 bad input (nothing written), 1 a failure
/// while writing. See docs/compare.md.
#[derive(Debug, Clone, Parser)]
#[command(name = "llmperf compare", max_term_width = 110)]
struct CompareArgs {
    /// The baseline: a run root (`outputs/<stamp>/<name>`, or a folder holding one), or one run folder.
    #[arg(value_name = "BASE")]
    base: PathBuf,

    /// The candidate, in the same form.
    #[arg(value_name = "NEW")]
    new: PathBuf,

    /// Fail (exit 3) when METRIC moved beyond THRESHOLD in the bad direction with 95 % confidence (its
    /// whole interval beyond): `p99_ttft:+10%`, `avg_latency:+200ms`, `rps:-5%`. METRIC as
    /// --sla-params names it (avg_ttft, p99_ttft, avg_tpot, p99_tpot, avg_latency, p99_latency, rps,
    /// tps; any of p1…p99), plus avg_itl / p99_itl; the sign is the bad direction. Repeatable.
    #[arg(long = "fail-on", value_name = "METRIC:±THRESHOLD")]
    fail_on: Vec<String>,

    /// An inconclusive gated metric (no interval: a throughput without --repeat, too few rows for a
    /// percentile) fails too.
    #[arg(long)]
    strict: bool,

    /// Output format of the comparison.
    #[arg(long, value_enum, default_value_t = Format::Console)]
    format: Format,

    /// Write the comparison to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Also write a JUnit XML report to FILE (one test case per gate and point).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

impl From<CompareError> for Error {
    fn from(e: CompareError) -> Error {
        Error::usage(e)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Runs `llmperf compare` on its argv (`compare` first).
fn run(argv: Vec<std::ffi::OsString>) -> Result<(), Error> {
    let args = CompareArgs::try_parse_from(argv)?;
    let gates = args
        .fail_on
        .iter()
        .map(|s| Gate::parse(s).map_err(|e| Error::usage(format!("--fail-on {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let report = compare(&args.base, &args.new, gates, args.strict)?;
    let text = render::render(&report, args.format);
    match &args.output {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("--output: cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    if let Some(path) = &args.junit {
        let stamp = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string();
        let xml = render::junit::render(&report, &stamp, &hostname());
        std::fs::write(path, xml)
            .with_context(|| format!("--junit: cannot write {}", path.display()))?;
    }
    let failures = report.failures();
    if failures.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = failures
        .iter()
        .map(|(key, g)| format!("{} at {key}", report.gates[g.gate].spec))
        .collect();
    Err(Error::Regression {
        gates: list.join("; "),
        count: failures.len(),
    })
}
