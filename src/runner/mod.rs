//! A whole invocation: the run root, logging, the simulator for `--api mock`, each run of the sweep in
//! turn, and the end-of-sweep report. Ends as [`Error::Interrupted`] when a signal stopped it.

mod agentx;
mod aggregate;
mod breakdown;
mod context;
mod control;
mod dispatch;
mod dry_run;
mod load_check;
mod monitor;
mod multi_turn;
mod outcome;
mod repeats;
mod requests;
mod results;
mod single;
mod sla;
mod tracker;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::api::openai::BodyComposer;
use crate::dataset::Prompts;
use crate::error::Error;
use crate::export;
use crate::logging;
use crate::plan::{LoadMode, RunPlan};
use crate::run_folder::RunRoot;
use crate::shutdown::Shutdown;
use crate::sim::{SimConfig, SimServer};
use crate::visualizer::{Visualizer, VisualizerKind};
pub use context::RunResult;
use context::SweepContext;
pub use dry_run::dry_run;
pub(crate) use load_check::{judge_run, plateau_rule, rule as load_rule, Sends};
pub(crate) use results::write_speed_table;
use single::run_single;
pub use tracker::{FinalStatus, ProgressTracker};

/// The endpoint to use: the plan's, or the simulator's with the plan's path.
fn effective_url(plan: &RunPlan, sim: Option<&SimServer>) -> Result<reqwest::Url> {
    match sim {
        Some(sim) => {
            let mut url = reqwest::Url::parse(&sim.base_url()).context("simulator URL")?;
            url.set_path(plan.url.path());
            url.set_query(plan.url.query());
            Ok(url)
        }
        None => Ok(plan.url.clone()),
    }
}

fn start_simulator(plan: &RunPlan, items: &Prompts) -> Result<Option<SimServer>> {
    let Some(mock) = &plan.mock else {
        return Ok(None);
    };
    let cfg = SimConfig {
        ttft: mock.ttft,
        itl: mock.itl,
        output_tokens: mock.output_tokens,
        threads: mock.threads,
        // Nothing reads the ground truth in a plain run; keep memory flat on long runs.
        record_truth: false,
        faults: mock.faults.clone(),
        max_batch: mock.max_batch,
        prefill_tok_per_s: mock.prefill_tok_per_s,
        decode_tok_per_s: mock.decode_tok_per_s,
        // Conversations resend their history, replayed traces repeat blocks: let the simulator report it cached.
        prefix_cache: plan
            .server_side
            .mock_prefix_cache
            .unwrap_or_else(|| plan.workload.repeats_prefixes()),
        metrics_fault: plan.server_side.mock_metrics_fault,
        reasoning_tokens: plan.server_side.mock_reasoning_tokens,
        jitter: mock.jitter,
        invalid_output_rate: mock.invalid_output_rate,
        max_connections: mock.max_connections,
        request_log: plan.traffic.mock_request_log.clone(),
        request_id_header: (plan.traffic.request_id_header.as_deref())
            .unwrap_or(crate::sim::DEFAULT_REQUEST_ID_HEADER)
            .to_string(),
        // With --tokenizer-path the simulator counts prompts as a server with that tokenizer would.
        prompt_counter: aggregate::usage_fallback(plan, items).prompt_counter(),
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).context("starting the built-in simulator (--api mock)")?;
    tracing::info!(
        "Built-in simulator listening on {} (TTFT {} ms, {} ms between tokens)",
        sim.base_url(),
        mock.ttft.as_secs_f64() * 1000.0,
        mock.itl.as_secs_f64() * 1000.0
    );
    Ok(Some(sim))
}

/// Runs every run of `plan`. An interrupted sweep still writes its files, then ends as
/// [`Error::Interrupted`]. `shutdown` is the stop state the signal handlers set.
pub async fn run_sweep(plan: RunPlan, items: Prompts, shutdown: Shutdown) -> Result<(), Error> {
    if let Some(signal) = shutdown.signal() {
        // Interrupted before anything was written.
        return Err(Error::Interrupted { signal });
    }
    let root = RunRoot::of(&plan);
    root.check_free(&plan)?;
    let tally = outcome::Tally::default();
    let monitors = monitor::Monitors::start(&plan, &shutdown)?;
    let swept = sweep(&plan, root, &Arc::new(items), &shutdown, &tally, &monitors).await;
    monitors.finish(&shutdown).await;
    swept?;
    match shutdown.signal() {
        Some(signal) => Err(Error::Interrupted { signal }),
        None => tally.verdict(),
    }
}

/// The sweep proper: the tracker, the run root, the simulator, each run, the report.
async fn sweep(
    plan: &RunPlan,
    root: RunRoot,
    items: &Arc<Prompts>,
    shutdown: &Shutdown,
    tally: &outcome::Tally,
    monitors: &monitor::Monitors,
) -> Result<()> {
    // The tracker's SDK must import before anything is created or sent.
    let mut visualizer = match plan.visualizer.clone() {
        Some(settings) => Some(
            tokio::task::spawn_blocking(move || Visualizer::spawn(&settings))
                .await
                .context("the visualizer start-up task failed")??,
        ),
        None => None,
    };
    create_root(plan, &root)?;
    let sim = start_simulator(plan, items)?;
    let url = effective_url(plan, sim.as_ref())?;
    if let Some(vis) = visualizer.as_mut() {
        start_visualizer(plan, &root, url.as_str(), vis)?;
    }
    let mut tracker = plan.progress_tracker.then(|| {
        let share = |n| crate::plan::sharding::share(plan.sharding.as_ref(), n);
        let total = plan.runs.iter().map(|r| share(r.number)).sum();
        ProgressTracker::start(root.progress(), total, plan.runs.len())
    });
    let ctx = SweepContext {
        plan,
        root: root.clone(),
        url: url.clone(),
        prompts: items.clone(),
        composer: BodyComposer::new(
            &plan.model,
            plan.params.clone(),
            plan.query_template.clone(),
        )
        .for_api(plan.api),
        shutdown: shutdown.clone(),
        visualizer: visualizer.as_ref().and_then(Visualizer::feed),
        tally,
        monitors,
        seed: single::sweep_seed(plan),
    };
    if let Some(sla) = &plan.sla {
        // SLA auto-tune: the search decides the runs (no HTML report, as evalscope).
        let outcome = sla::run(&ctx, sla, &report_info(plan, &root, &url), tracker.take()).await;
        drop(ctx);
        drop(sim);
        return outcome;
    }
    let (results, mut failure) = run_each(&ctx, &mut tracker).await;
    monitors.sweep_done();
    if let Some(agentx) = plan.workload.agentx() {
        if let Err(e) = agentx::write_summaries(&root, agentx, &results) {
            failure = failure.or(Some(e));
        }
    }

    let interrupted = shutdown.stopping();
    if let Some(t) = tracker.as_mut() {
        t.finish(match &failure {
            Some(e) => FinalStatus::Failed(format!("{e:#}")),
            None if interrupted => FinalStatus::Interrupted,
            None => FinalStatus::Completed,
        });
    }
    drop(ctx);
    if let Some(vis) = visualizer {
        if let Err(e) = tokio::task::spawn_blocking(move || vis.finish())
            .await
            .context("the visualizer task failed")
            .and_then(|r| r)
        {
            tracing::warn!("{e:#}");
        }
    }
    if !results.is_empty() {
        write_root_report(
            &report_info(plan, &root, &url),
            &root,
            &results,
            interrupted,
        )?;
    }
    drop(sim);
    tokio::time::sleep(Duration::from_millis(1)).await;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Creates the run root and its log, and logs what the sweep will do.
fn create_root(plan: &RunPlan, root: &RunRoot) -> Result<()> {
    root.create()?;
    logging::set_log_file(&root.log())
        .with_context(|| format!("--outputs-dir: cannot write in {}", root.path().display()))?;
    tracing::info!("Save the result to: {}", root.path().display());
    if let Some(typed) = &plan.url_appended_to {
        tracing::info!("--url {typed} names no endpoint: using {}", plan.url);
    }
    if plan.mode == LoadMode::Open {
        let rates: Vec<String> = plan
            .runs
            .iter()
            .map(|r| crate::pyjson::float_repr(r.load.rate_as_written()))
            .collect();
        let numbers: Vec<String> = plan.runs.iter().map(|r| r.number.to_string()).collect();
        tracing::info!(
            "open-loop mode enabled: concurrency is unbounded (parallel set to -1 / INF). Rate sweep: [{}], number sweep: [{}].",
            rates.join(", "),
            numbers.join(", ")
        );
    }
    Ok(())
}

/// Each run in turn, with the pause between runs; stops at a signal or the first failure.
async fn run_each(
    ctx: &SweepContext<'_>,
    tracker: &mut Option<ProgressTracker>,
) -> (Vec<RunResult>, Option<anyhow::Error>) {
    let plan = ctx.plan;
    let mut results: Vec<RunResult> = Vec::new();
    for (i, spec) in plan.runs.iter().enumerate() {
        if i > 0 && !plan.sleep_interval.is_zero() {
            tracing::info!(
                "Sleeping for {} seconds before the next run...",
                plan.sleep_interval.as_secs()
            );
            tokio::select! {
                _ = tokio::time::sleep(plan.sleep_interval) => {}
                _ = ctx.shutdown.stopped() => {}
            }
        }
        if ctx.shutdown.stopping() {
            break;
        }
        match run_single(ctx, spec, i, tracker).await {
            Ok(result) => {
                let stop = result.interrupted;
                results.push(result);
                if let Err(e) = repeats::after_run(ctx, &results) {
                    return (results, Some(e));
                }
                if stop {
                    break;
                }
            }
            Err(e) => return (results, Some(e)),
        }
    }
    (results, None)
}

/// Initialises the tracker run: evalscope's run name and the sweep's masked arguments as its config.
fn start_visualizer(plan: &RunPlan, root: &RunRoot, url: &str, vis: &mut Visualizer) -> Result<()> {
    let settings = plan
        .visualizer
        .as_ref()
        .expect("a visualizer is configured");
    if settings.implied_by_key {
        // Only the deprecated key flags imply a tracker: wandb's or SwanLab's.
        let flag = match settings.kind {
            VisualizerKind::Wandb => "--wandb-api-key",
            VisualizerKind::Swanlab | VisualizerKind::Clearml => "--swanlab-api-key",
        };
        tracing::warn!(
            "{flag} is deprecated. Please use `--visualizer {}` instead.",
            settings.kind.name()
        );
    }
    let root = root.path().to_string_lossy().into_owned();
    let mut config = crate::plan::args::args_json(plan, &plan.runs[0], url, &root);
    config.insert(
        "number".into(),
        plan.runs
            .iter()
            .map(|r| r.number)
            .collect::<Vec<_>>()
            .into(),
    );
    config.insert(
        "parallel".into(),
        plan.runs
            .iter()
            .map(|r| r.load.parallel_as_written())
            .collect::<Vec<_>>()
            .into(),
    );
    config.insert(
        "rate".into(),
        plan.runs
            .iter()
            .map(|r| r.load.rate_as_written())
            .collect::<Vec<_>>()
            .into(),
    );
    let name = match &plan.name {
        Some(n) => n.clone(),
        None => format!(
            "{}_{}",
            plan.model_id,
            chrono::Local::now().format("%Y%m%d_%H%M%S")
        ),
    };
    vis.init(&name, &config, &root)?;
    tracing::info!("Logging to {} as run {name:?}", settings.kind.name());
    Ok(())
}

/// Prints the end-of-sweep text report and writes it and `perf_report.html` under `root` for `results`
/// (also used by `llmperf merge`).
pub fn write_root_report(
    info: &export::report::ReportInfo,
    root: &RunRoot,
    results: &[RunResult],
    interrupted: bool,
) -> Result<()> {
    let runs: Vec<export::report::RunReport> = results
        .iter()
        .map(|r| {
            let (concurrency, rate) = export::report::RunReport::load_of(&r.summary);
            export::report::RunReport {
                concurrency,
                rate,
                number: r.spec.number,
                summary: r.summary.clone(),
                percentiles: r.percentiles.clone(),
                workload: r.workload.clone(),
                trace: r.trace.clone(),
            }
        })
        .collect();
    let text = export::report::performance_summary(info, &runs);
    println!("{text}");
    root.write_performance_summary(&text)?;
    tracing::info!(
        "Performance summary saved to: {}",
        root.performance_summary().display()
    );
    let html_runs: Vec<export::html::HtmlRun> = results
        .iter()
        .zip(&runs)
        .map(|(r, report)| html_run(r, report))
        .collect();
    let path = root.report_html();
    let header = export::html::HtmlHeader::new(info, interrupted);
    match export::html::write_report(&path, &header, &html_runs) {
        Ok(bytes) => tracing::info!(
            "HTML report generated: {} ({} KiB)",
            path.display(),
            bytes.div_ceil(1024)
        ),
        Err(e) => tracing::warn!("Failed to generate HTML report: {e:#}"),
    }
    Ok(())
}

/// A run as the HTML report reads it: its report, its rows and its server series.
fn html_run(r: &RunResult, report: &export::report::RunReport) -> export::html::HtmlRun {
    export::html::HtmlRun {
        name: crate::run_folder::run_name(&r.spec),
        report: report.clone(),
        db_path: r.dir.database(),
        server: r.dir.read_server_metrics(),
        summary_json: r.summary.to_json_string(),
    }
}

/// The `Basic Information` facts of the end-of-sweep report.
fn report_info(plan: &RunPlan, root: &RunRoot, url: &reqwest::Url) -> export::report::ReportInfo {
    export::report::ReportInfo {
        model: plan.model_id.clone(),
        dataset: plan.dataset_name().to_string(),
        api: plan.api_name.as_str().to_string(),
        alias: plan.alias.clone(),
        endpoint: match url.port_or_known_default() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or("")),
            None => url.host_str().unwrap_or("").to_string(),
        },
        output_path: root.path().to_string_lossy().into_owned(),
        input_only: plan.api.input_only(),
    }
}
