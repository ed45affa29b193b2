//! A run's results, computed and written the moment it ends: the summary (with the client's
//! self-diagnostics, a replay's fidelity, reasoning and server keys appended), the percentiles, the
//! workload files, the per-trace summary and a speed table, each logged as evalscope logs it.

use anyhow::Result;

use super::context::{RunResult, SweepContext};
use super::dispatch::Measured;
use crate::export;
use crate::plan::{DatasetKind, RunSpec};
use crate::run_folder::{RunDir, RunResults};

/// Computes and writes run `spec`'s results into `dir`. `stopped_early`: a signal came before it sent
/// anything.
pub(super) async fn write(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    dir: RunDir,
    measured: Measured,
    stopped_early: bool,
) -> Result<RunResult> {
    let Measured {
        acc,
        scrape,
        observers,
        rows,
        cpu_use,
        outcome,
        control,
    } = measured;
    // Marked only when the signal cut the run short: a run whose every request was sent and finished is
    // complete, even if the signal came while its last requests were in flight.
    let interrupted = stopped_early || outcome.interrupted || outcome.abandoned > 0;
    let mut summary = acc.summary();
    summary.extras.interrupted = interrupted;
    summary.extras.client = acc.client_diagnostics(cpu_use, spec.load.is_open());
    if let Some(warning) = summary
        .extras
        .client
        .as_ref()
        .and_then(|c| c.limit_message())
    {
        tracing::warn!("{warning}");
    }
    append_observer_keys(ctx, spec, &acc, &observers, &control.0, &mut summary);
    if let Some(server) = crate::server_metrics::finish_for_run(scrape, &mut summary).await {
        if let Err(e) = dir.write_server_metrics(&server) {
            tracing::warn!("--server-metrics: {e:#}");
        }
    }
    (summary.extras.load, summary.extras.plateau) = super::load_check::judge_run(
        &dir,
        (load_rule(ctx, spec), plateau_rule(ctx, spec)),
        client_limits(&summary),
        &acc.warmup_spans(),
    );
    summary.extras.phases = crate::metrics::phases::summarize(&dir.database());
    let percentiles = acc.percentiles();
    let spilled_bytes = acc.spilled_bytes() + observers.timeline.spilled_bytes();
    if spilled_bytes > 0 {
        tracing::info!(
            "Exact percentiles: {:.1} MiB of samples were kept in temporary files (removed at the end of the run) instead of in memory",
            spilled_bytes as f64 / 1048576.0
        );
    }
    log_input_check(&summary);
    dir.write_results(&RunResults {
        summary: &summary,
        percentiles: &percentiles,
        timeline: &observers.timeline,
    })?;
    export::console::log_summary_tables(&summary, &percentiles);
    if ctx.plan.monitor.save_vllm_bench {
        save_vllm_bench(&dir);
    }
    let trace = observers.trace.summary();
    dir.write_trace_summary(&trace)?;
    if !trace.is_empty() {
        tracing::info!(
            "\nPer-trace summary ({} traces):\n{}",
            trace.n_traces,
            trace.to_table()
        );
    }
    // Like evalscope, the workload files (and table) exist only when a request succeeded.
    let workload = observers.timeline.throughput();
    if let Some(w) = &workload {
        export::console::log_workload_table(w);
    }
    if matches!(
        ctx.plan.dataset_kind(),
        Some(DatasetKind::SpeedBenchmark | DatasetKind::SpeedBenchmarkLong)
    ) {
        write_speed_table(&dir)?;
    }
    if ctx.plan.traffic.models.is_some() || ctx.plan.traffic.endpoints.is_some() {
        super::breakdown::write(ctx.plan, &dir, summary.test_duration_s)?;
    }
    tracing::info!(
        "Save the summary to: {} ({rows} requests stored)",
        dir.path().display()
    );
    ctx.tally
        .run_finished(&crate::run_folder::run_name(spec), &summary);
    if let Some(feed) = &ctx.visualizer {
        feed.summary(
            &crate::run_folder::run_name(spec),
            &summary.to_json_string(),
        );
    }
    Ok(RunResult {
        spec: spec.clone(),
        summary,
        percentiles,
        interrupted,
        workload,
        dir,
        trace,
    })
}

/// llmperf's keys appended after evalscope's: a replayed trace's fidelity (also logged), reasoning, tool
/// calls and the server-control record.
fn append_observer_keys(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    acc: &crate::metrics::Accumulator,
    observers: &super::aggregate::Observers,
    control: &crate::server_control::RunControl,
    summary: &mut crate::metrics::BenchmarkSummary,
) {
    if let Some(built) = &ctx.prompts.replay {
        let n = (spec.number as usize).min(built.input_tokens.len());
        let keys = observers.replay.keys(
            acc.send_lag_percentiles(),
            &built.input_tokens[..n],
            &built.implied_cached_tokens[..n],
        );
        tracing::info!(
            "Trace replay fidelity: {}",
            keys.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        summary.extras.appended.extend(keys);
    }
    summary
        .extras
        .appended
        .extend(observers.reasoning.summary_keys());
    summary
        .extras
        .appended
        .extend(observers.tool_calls.summary_keys());
    summary.extras.appended.extend(control.summary_keys());
}

/// `--save-format vllm-bench`: `vllm bench serve`'s result file, from the rows just stored. A failure is a
/// warning: the run's own files are written, and `llmperf export` can write this one later.
fn save_vllm_bench(dir: &RunDir) {
    let written = crate::vllm_bench::prepare(dir)
        .map_err(anyhow::Error::new)
        .and_then(|export| export.write(None));
    match written {
        Ok(path) => tracing::info!("vLLM bench result saved to: {}", path.display()),
        Err(e) => tracing::warn!(
            "--save-format vllm-bench: {e:#} (`llmperf export {} --format vllm-bench` retries)",
            dir.path().display()
        ),
    }
}

/// `speed_benchmark` datasets: the speed table from the run's rows, written and logged once.
pub(crate) fn write_speed_table(dir: &RunDir) -> Result<()> {
    let rows = export::speed_benchmark::speed_rows(&dir.database())?;
    dir.write_speed_benchmark(&rows)?;
    let table = export::speed_benchmark::table(&rows);
    tracing::info!("\nSpeed Benchmark Results:\n{table}");
    Ok(())
}

/// Logs the server's prompt count against the intended one, when the dataset knows what it meant.
fn log_input_check(summary: &crate::metrics::BenchmarkSummary) {
    let Some(e) = &summary.extras.input_token_error else {
        return;
    };
    let line = format!(
        "Input length check ({} requests): server prompt_tokens − intended: mean {}, max {}, exact {}% (intended mean {})",
        e.requests, e.avg_error, e.max_error, e.exact_pct, e.avg_intended
    );
    if e.exact_pct < 100.0 {
        tracing::warn!("{line}: the server counts prompts differently from --tokenizer-path (another tokenizer or chat template?)");
    } else {
        tracing::info!("{line}");
    }
}

/// `--ramp-up` in seconds, when it ramps at all.
fn ramp_up_s(ctx: &SweepContext<'_>) -> Option<f64> {
    ctx.plan.server_side.arrival.ramp_up_s.filter(|d| *d > 0.0)
}

/// The load rule of run `spec` of this sweep.
fn load_rule(ctx: &SweepContext<'_>, spec: &RunSpec) -> crate::metrics::load::LoadRule {
    super::load_check::rule(spec, sends(ctx), ramp_up_s(ctx))
}

/// The plateau rule of run `spec` of this sweep.
fn plateau_rule(ctx: &SweepContext<'_>, spec: &RunSpec) -> crate::metrics::load::PlateauRule {
    super::load_check::plateau_rule(spec, sends(ctx), ramp_up_s(ctx))
}

/// What this sweep's runs send, as far as their load rule goes.
fn sends(ctx: &SweepContext<'_>) -> super::load_check::Sends {
    use super::load_check::Sends;
    match &ctx.plan.workload {
        _ if ctx.plan.sharding.as_ref().is_some_and(|s| s.is_split()) => Sends::ShardShare,
        crate::plan::Workload::MultiTurn(_) => Sends::Conversations,
        crate::plan::Workload::AgentGraph(_) => Sends::Sessions,
        _ => Sends::Requests,
    }
}

/// Why the client's self-diagnostics say it limited the run.
fn client_limits(summary: &crate::metrics::BenchmarkSummary) -> Vec<String> {
    summary
        .extras
        .client
        .as_ref()
        .map(|c| c.limits.clone())
        .unwrap_or_default()
}
