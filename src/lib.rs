//! llmperf: a fast, truthful load generator for LLM serving endpoints and a drop-in replacement for
//! `evalscope perf`.
//!
//! Data flow: [`cli::Cli`] (raw flags) → [`plan::RunPlan`] (validated) → for each run of the sweep, the
//! [`dataset`] gives inputs, [`api`] turns them into bodies, the [`engine`] sends them and turns each response
//! into a [`record::RequestRecord`], one aggregator feeds [`metrics`] and the [`store`], and [`export`]
//! writes evalscope's files. [`sim`] is the built-in OpenAI-compatible simulator.

pub mod api;
pub mod cli;
pub mod clock;
pub mod dataset;
pub mod engine;
pub mod export;
pub mod hub;
pub mod jsonscan;
pub mod logging;
pub mod metrics;
pub mod plan;
pub mod progress;
pub mod pyjson;
pub mod record;
pub mod resources;
pub mod runner;
pub mod secret;
pub mod shutdown;
pub mod sim;
pub mod sla;
pub mod store;
#[cfg(test)]
mod test_support;
pub mod tokenizer;
pub mod visualizer;

/// Exit code for usage errors (bad flags or input).
pub const EXIT_USAGE: i32 = 2;
/// Exit code for runtime failures.
pub const EXIT_FAILURE: i32 = 1;

/// Raises the open-file limit for the largest `--parallel` of the sweep (one socket per request in flight,
/// two with the in-process simulator of `--api mock`); an error names the limit when it cannot be raised
/// far enough. Open loop has no fixed cap: the soft limit is raised as far as allowed.
fn ensure_open_files(plan: &plan::RunPlan) -> Result<(), String> {
    if plan.mode == plan::LoadMode::Open {
        let _ = resources::ensure_file_limit(u64::MAX);
        return Ok(());
    }
    let parallel = plan
        .runs
        .iter()
        .map(|r| r.parallel.max(1) as u64)
        .max()
        .unwrap_or(1);
    let per_request = if plan.mock.is_some() { 2 } else { 1 };
    let needed = parallel * per_request + resources::FD_HEADROOM;
    resources::ensure_file_limit(needed)
        .map(|_| ())
        .map_err(|e| format!("--parallel {parallel}: {e}"))
}

/// Runs llmperf for parsed flags and returns the process exit code.
///
/// The runtime and the Ctrl-C/SIGTERM handlers come first, so a signal at any later moment ends the run
/// cleanly (exit 128 + signal) instead of killing the process half-way.
pub fn run(cli: cli::Cli) -> i32 {
    clock::init();
    logging::init(cli.debug);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    let shutdown = shutdown::Shutdown::new();
    {
        let _guard = runtime.enter();
        shutdown.install_signal_handlers();
    }
    let plan = match plan::RunPlan::from_cli(cli, chrono::Local::now()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if let Err(e) = ensure_open_files(&plan) {
        eprintln!("error: {e}");
        return EXIT_USAGE;
    }
    let limit = plan.runs.iter().map(|r| r.total()).max().unwrap_or(1) as usize;
    let tokenizer = match &plan.tokens.tokenizer_path {
        Some(spec) => match tokenizer::Tokenizer::load(spec) {
            Ok(t) => Some(std::sync::Arc::new(t)),
            Err(e) => {
                eprintln!("error: {e:#}");
                return EXIT_USAGE;
            }
        },
        None => None,
    };
    let items = match dataset::Prompts::load(&plan, tokenizer, limit) {
        Ok(items) => items,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    let code = match runtime.block_on(runner::run_sweep(plan, items, shutdown)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            EXIT_FAILURE
        }
    };
    logging::close_log_file();
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}
