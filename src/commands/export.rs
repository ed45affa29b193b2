//! `llmperf export RUN… --format vllm-bench [--outputs-dir DIR]`: writes finished runs' results in another
//! tool's format, computed from their stored rows ([`crate::vllm_bench`]). A run root, a merged sharded
//! run or an outputs folder stands for every run folder below it. Every run is read and checked before
//! anything is written (exit 2 when one cannot be exported).

use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

use super::Subcommand;
use crate::error::Error;

/// How deep below a given folder run folders are looked for (`outputs/<stamp>/<name>/sla_tuning/<run>`).
const SEARCH_DEPTH: usize = 4;

/// The formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// `vllm bench serve`'s result JSON (its `--save-result`; what vLLM's sweep and plot tools read).
    VllmBench,
}

/// Write finished runs' results in another tool's format, computed from each run's rows.
#[derive(Debug, Clone, Parser)]
#[command(name = "llmperf export", max_term_width = 110)]
struct ExportArgs {
    /// Run folders, or folders holding them (a run root, a merged sharded run, an outputs folder).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,

    /// The format: `vllm-bench` writes `vllm_bench_serve.json` into each run folder (or, with
    /// `--outputs-dir`, a file named as `vllm bench serve` names it).
    #[arg(long, value_enum)]
    format: Format,

    /// Write the files into this folder instead of each run's folder.
    #[arg(long, value_name = "DIR")]
    outputs_dir: Option<PathBuf>,
}

pub(super) const COMMAND: Subcommand = Subcommand {
    name: "export",
    command: <ExportArgs as CommandFactory>::command,
    run,
};

fn run(argv: Vec<std::ffi::OsString>) -> Result<(), Error> {
    let args = ExportArgs::try_parse_from(argv)?;
    let Format::VllmBench = args.format;
    let mut runs = Vec::new();
    for path in &args.runs {
        if !path.is_dir() {
            return Err(Error::usage(format!(
                "{}: no such folder (give run folders, or folders holding them)",
                path.display()
            )));
        }
        let found = crate::run_folder::find_runs(path, SEARCH_DEPTH);
        if found.is_empty() {
            return Err(Error::usage(format!(
                "{}: no run folder (a folder with a run's arguments file) at most {SEARCH_DEPTH} levels below",
                path.display()
            )));
        }
        runs.extend(found);
    }
    runs.sort_by(|a, b| a.path().cmp(b.path()));
    runs.dedup_by(|a, b| a.path() == b.path());
    let exports = runs
        .iter()
        .map(crate::vllm_bench::prepare)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::usage)?;
    if let Some(dir) = &args.outputs_dir {
        let mut names: Vec<(String, &std::path::Path)> = Vec::new();
        for e in &exports {
            let name = e.info.file_name();
            if let Some((_, other)) = names.iter().find(|(n, _)| *n == name) {
                return Err(Error::usage(format!(
                    "{} and {} would both be written as {}: export them into separate folders",
                    other.display(),
                    e.dir.path().display(),
                    dir.join(&name).display()
                )));
            }
            names.push((name, e.dir.path()));
        }
    }
    for e in &exports {
        let path = e
            .write(args.outputs_dir.as_deref())
            .map_err(Error::Runtime)?;
        println!("{}", path.display());
    }
    Ok(())
}
