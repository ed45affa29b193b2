//! llmperf: a fast, truthful load generator for LLM serving endpoints and a drop-in replacement for
//! `evalscope perf`.
//!
//! Data flow: [`cli::Cli`] (raw flags) → [`plan::RunPlan`] (validated) → for each run of the sweep, the
//! [`dataset`] gives inputs, [`api`] turns them into bodies, the [`engine`] sends them and turns each response
//! into a [`record::RequestRecord`], one aggregator feeds [`metrics`] and the [`store`], and [`export`]
//! writes evalscope's files. [`sim`] is the built-in OpenAI-compatible simulator. While a sweep runs,
//! the aggregator publishes its counts to the [`live`] board, which the terminal dashboard and the
//! metrics endpoint read.

pub mod api;
pub mod cli;
pub mod clock;
pub(crate) mod commands;
pub mod compare;
pub(crate) mod dashboard;
pub mod dataset;
pub mod engine;
pub mod error;
pub mod export;
pub mod gpu_memory;
pub(crate) mod hub;
pub(crate) mod jsonscan;
pub mod live;
pub mod local_server;
pub(crate) mod logging;
pub mod merge;
pub mod metrics;
pub(crate) mod metrics_endpoint;
#[cfg(test)]
mod module_graph_tests;
pub mod plan;
pub(crate) mod progress;
pub mod pyjson;
pub mod reasoning;
pub mod record;
pub mod resources;
pub mod run_folder;
pub(crate) mod runner;
pub mod scenario;
pub(crate) mod secret;
pub mod server_control;
pub mod server_metrics;
pub mod shard;
pub mod shutdown;
pub mod sim;
pub mod sla;
pub mod stats;
pub mod store;
pub mod structured;
mod sys;

#[cfg(test)]
mod test_support;
pub(crate) mod text;
pub mod tokenizer;
pub mod tool_calls;
pub(crate) mod traces;
pub(crate) mod visualizer;
pub mod vllm_bench;

pub use error::{Error, EXIT_FAILURE, EXIT_USAGE};

/// Raises the open-file limit for the largest `--parallel` of the sweep (one socket per request in flight,
/// two with the in-process simulator of `--api mock`); an error names the limit when it cannot be raised
/// far enough. Open loop has no fixed cap: the soft limit is raised as far as allowed.
fn ensure_open_files(plan: &plan::RunPlan) -> Result<(), Error> {
    if plan.runs.iter().any(|r| r.load.is_open()) {
        let _ = resources::ensure_file_limit(u64::MAX);
        return Ok(());
    }
    let parallel = plan
        .runs
        .iter()
        .filter_map(|r| r.load.parallel())
        .map(|p| plan::sharding::share(plan.sharding.as_ref(), p.get() as u64))
        .max()
        .unwrap_or(1);
    let per_request = if plan.mock.is_some() { 2 } else { 1 };
    let needed = parallel * per_request + resources::FD_HEADROOM;
    resources::ensure_file_limit(needed)
        .map(|_| ())
        .map_err(|e| Error::usage(format!("--parallel {parallel}: {e}")))
}

/// The `llmperf` binary: a subcommand when argv[1] names one ([`commands::SUBCOMMANDS`]), else the flat
/// evalscope command line. `args` is argv, program name first. Returns the process exit code.
pub fn main_with_args(args: Vec<std::ffi::OsString>) -> i32 {
    if let Some(sub) = commands::find(&args) {
        return error::exit_code(commands::run(sub, &args));
    }
    let args =
        cli::resolve_evalscope_prefixes(&<cli::Cli as clap::CommandFactory>::command(), args);
    match commands::parse_flat(args) {
        Ok(cli) => run(cli),
        Err(e) => error::exit_code(Err(e)),
    }
}

/// Runs llmperf for parsed flags and returns the process exit code ([`Error::exit_code`]).
///
/// The runtime and the Ctrl-C/SIGTERM handlers come first, so a signal at any later moment ends the run
/// cleanly (exit 128 + signal) instead of killing the process half-way.
pub fn run(cli: cli::Cli) -> i32 {
    clock::init();
    logging::init(cli.debug);
    cli.warn_repeated_flags();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let e = anyhow::Error::new(e).context("cannot start the async runtime");
            return error::exit_code(Err(e.into()));
        }
    };
    let shutdown = shutdown::Shutdown::new();
    {
        let _guard = runtime.enter();
        shutdown.install_signal_handlers();
    }
    // Reported before the log file closes, so a runtime failure also reaches benchmark.log.
    let code = error::exit_code(run_on(&runtime, cli, shutdown));
    logging::close_log_file();
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// Plans, checks everything that can be checked before anything is written (the output folder, open
/// files, the tokenizer, the dataset: usage errors), then runs the sweep.
fn run_on(
    runtime: &tokio::runtime::Runtime,
    cli: cli::Cli,
    shutdown: shutdown::Shutdown,
) -> Result<(), Error> {
    let plan = plan::RunPlan::from_cli(cli, chrono::Local::now())?;
    for warning in &plan.traffic.warnings {
        tracing::warn!("{warning}");
    }
    let dry_run = plan.traffic.dry_run.clone();
    if dry_run.is_none() {
        run_folder::RunRoot::of(&plan).check_free(&plan)?;
        ensure_open_files(&plan)?;
    }
    let limit = plan.runs.iter().map(|r| r.total()).max().unwrap_or(1) as usize;
    let tokenizer = match &plan.tokens.tokenizer_path {
        Some(spec) => Some(std::sync::Arc::new(
            tokenizer::Tokenizer::load_from(spec, plan.data_source)
                .map_err(|e| Error::usage(format!("{e:#}")))?,
        )),
        None => None,
    };
    let items = dataset::Prompts::load(&plan, tokenizer, limit)
        .map_err(|e| Error::usage(format!("{e:#}")))?;
    if let Some(dry) = &dry_run {
        return Ok(runner::dry_run(&plan, items, dry)?);
    }
    // Started from this (the main) thread, so the server follows llmperf if it dies; stopped on drop.
    let _server = match &plan.local {
        Some(settings) => Some(local_server::LocalServer::start(
            settings,
            plan.timeouts.total,
            || shutdown.signal(),
        )?),
        None => None,
    };
    let _gpu = _server.as_ref().and_then(|_| gpu_memory::Sampler::start());
    runtime.block_on(runner::run_sweep(plan, items, shutdown))
}
