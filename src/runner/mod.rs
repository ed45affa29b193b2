//! A whole invocation: the run root, logging, the simulator for `--api mock`, each run of the sweep in
//! turn, and the end-of-sweep report. Maps the outcome to an exit code.

mod aggregate;
mod single;

use std::time::Duration;

use anyhow::{Context, Result};

use crate::api::openai::BodyComposer;
use crate::dataset::Prompts;
use crate::export;
use crate::logging;
use crate::plan::{LoadMode, RunPlan};
use crate::shutdown::Shutdown;
use crate::sim::{SimConfig, SimServer};
pub use single::RunResult;
use single::{run_single, SweepContext};

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

fn start_simulator(plan: &RunPlan) -> Result<Option<SimServer>> {
    let Some(mock) = &plan.mock else {
        return Ok(None);
    };
    let cfg = SimConfig {
        ttft: mock.ttft,
        itl: mock.itl,
        output_tokens: mock.output_tokens,
        threads: mock.threads,
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

/// Runs every run of `plan`; returns the process exit code (0, or 130/143 when interrupted).
pub async fn run_sweep(plan: RunPlan, items: Prompts) -> Result<i32> {
    let root = plan.output_root.clone();
    if root.join("benchmark.log").exists()
        || plan
            .runs
            .iter()
            .any(|r| root.join(&r.dir_name).join("benchmark_data.db").exists())
    {
        anyhow::bail!(
            "The database file already exists under {}: choose another --name/--outputs-dir, or drop --no-timestamp",
            root.display()
        );
    }
    std::fs::create_dir_all(&root)
        .with_context(|| format!("--outputs-dir: cannot create {}", root.display()))?;
    logging::set_log_file(&root.join("benchmark.log"))
        .with_context(|| format!("--outputs-dir: cannot write in {}", root.display()))?;
    tracing::info!("Save the result to: {}", root.display());
    let (_, appended) = crate::plan::complete_url(&plan.cli.url)?;
    if appended {
        tracing::warn!(
            "--url {} names no endpoint: using {}",
            plan.cli.url,
            plan.url
        );
    }
    if plan.mode == LoadMode::Open {
        let rates: Vec<String> = plan
            .runs
            .iter()
            .map(|r| crate::pyjson::float_repr(r.rate))
            .collect();
        let numbers: Vec<String> = plan.runs.iter().map(|r| r.number.to_string()).collect();
        tracing::info!(
            "open-loop mode enabled: concurrency is unbounded (parallel set to -1 / INF). Rate sweep: [{}], number sweep: [{}].",
            rates.join(", "),
            numbers.join(", ")
        );
    }

    let sim = start_simulator(&plan)?;
    let url = effective_url(&plan, sim.as_ref())?;
    let shutdown = Shutdown::new();
    tokio::spawn(shutdown.clone().listen_for_signals());
    let ctx = SweepContext {
        plan: &plan,
        url: url.clone(),
        prompts: &items,
        composer: BodyComposer::new(
            &plan.model,
            plan.params.clone(),
            plan.query_template.clone(),
        )
        .for_api(plan.api),
        shutdown: shutdown.clone(),
    };

    let mut results: Vec<RunResult> = Vec::new();
    let mut failure = None;
    for (i, spec) in plan.runs.iter().enumerate() {
        if i > 0 && !plan.sleep_interval.is_zero() {
            tracing::info!(
                "Sleeping for {} seconds before the next run...",
                plan.sleep_interval.as_secs()
            );
            tokio::select! {
                _ = tokio::time::sleep(plan.sleep_interval) => {}
                _ = shutdown.stopped() => {}
            }
        }
        if shutdown.stopping() {
            break;
        }
        match run_single(&ctx, spec, i).await {
            Ok(result) => {
                let stop = result.interrupted;
                results.push(result);
                if stop {
                    break;
                }
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }

    if !results.is_empty() {
        write_report(&plan, &url, &results)?;
    }
    drop(sim);
    tokio::time::sleep(Duration::from_millis(1)).await;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(shutdown.exit_code().unwrap_or(0))
}

fn write_report(plan: &RunPlan, url: &reqwest::Url, results: &[RunResult]) -> Result<()> {
    let info = export::report::ReportInfo {
        model: plan.model.clone(),
        dataset: plan.dataset_name().to_string(),
        api: plan.cli.api.clone(),
        alias: plan.cli.alias.clone(),
        endpoint: match url.port_or_known_default() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or("")),
            None => url.host_str().unwrap_or("").to_string(),
        },
        output_path: plan.output_root.to_string_lossy().into_owned(),
        input_only: plan.api.input_only(),
    };
    let runs: Vec<export::report::RunReport> = results
        .iter()
        .map(|r| export::report::RunReport {
            concurrency: r.spec.parallel,
            rate: r.spec.rate,
            number: r.spec.number,
            summary: r.summary.clone(),
            percentiles: r.percentiles.clone(),
        })
        .collect();
    let text = export::report::performance_summary(&info, &runs);
    println!("{text}");
    let path = plan.output_root.join("performance_summary.txt");
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    tracing::info!("Performance summary saved to: {}", path.display());
    Ok(())
}
