//! `--dataset workload_trace` (and the synthesized-prompt traces `mooncake_trace`, `burstgpt_trace`,
//! `azure_trace`), validated before anything runs: it needs `--open-loop` and a trace file,
//! whose every line is checked here (a bad line is a usage error naming it). The runs replay the trace's
//! records: all of them while `--number` is left at its default, else the first `--number`; their folders
//! keep evalscope's names (`--rate` and `--number` as typed). There is no separate warmup phase: as in
//! evalscope, `--warmup-num` marks the trace's own first records warmup (sent on the trace's schedule, left
//! out of the results; the run's arguments then record `warmup_num` 0).

use std::sync::Arc;

use super::{usage, Load, LoadMode, PromptSource, RunSpec, UsageError};
use crate::cli::{Cli, DatasetName};
use crate::traces::replay::{self, Format, ReplayTrace};
use crate::traces::workload_trace::{self, TraceRequest};

/// `--number`'s default: left as is, the whole trace is replayed.
const DEFAULT_NUMBER: u64 = 1000;

/// A trace of `n` requests: each run replays all of them while `--number` is left at its default, else the
/// first `--number`, at the trace's own offsets (`--rate` and `--number` as typed only name it); no warmup
/// phase (the warmup is the trace's first records, `runner::requests`).
fn fit_runs(runs: &mut [RunSpec], n: u64) {
    for r in runs.iter_mut() {
        r.load = Load::Trace {
            rate_as_typed: r.load.rate_as_written(),
            number_as_typed: r.number,
        };
        r.number = if r.number == DEFAULT_NUMBER {
            n
        } else {
            r.number.min(n)
        };
        r.warmup = 0;
    }
}

/// `--dataset mooncake_trace / burstgpt_trace / azure_trace`: the checked trace (`None` for other
/// datasets), with the same needs and run sizes as `workload_trace`; its prompts are built later, once the
/// tokenizer is loaded.
pub(super) fn replay_trace(
    cli: &Cli,
    mode: LoadMode,
    prompts: &PromptSource,
    runs: &mut [RunSpec],
) -> Result<Option<Arc<ReplayTrace>>, UsageError> {
    let format = match cli.dataset {
        DatasetName::MooncakeTrace => Format::Mooncake,
        DatasetName::BurstGptTrace => Format::BurstGpt,
        DatasetName::AzureTrace => Format::Azure,
        _ => return Ok(None),
    };
    if matches!(prompts, PromptSource::Fixed(_)) {
        return Ok(None);
    }
    let name = format.dataset();
    if mode != LoadMode::Open {
        return usage(format!(
            "{name} requires open-loop mode. Add --open-loop to your command."
        ));
    }
    let PromptSource::Dataset {
        path: Some(path), ..
    } = prompts
    else {
        return usage(format!(
            "{name} requires --dataset-path pointing to the trace file."
        ));
    };
    let args = replay::parse_args(format, cli.dataset_args.as_ref())?;
    let trace = replay::load(format, path, args)?;
    fit_runs(runs, trace.records.len() as u64);
    tracing::info!(
        "{name}: loaded {} records, speed={}x",
        trace.records.len(),
        crate::pyjson::float_repr(trace.args.speed)
    );
    Ok(Some(Arc::new(trace)))
}

/// The loaded trace (`None` for other datasets); the runs' request counts follow it.
pub(super) fn workload_trace(
    cli: &Cli,
    mode: LoadMode,
    prompts: &PromptSource,
    runs: &mut [RunSpec],
) -> Result<Option<Arc<Vec<TraceRequest>>>, UsageError> {
    if cli.dataset != DatasetName::WorkloadTrace || matches!(prompts, PromptSource::Fixed(_)) {
        return Ok(None);
    }
    if mode != LoadMode::Open {
        return usage("workload_trace requires open-loop mode. Add --open-loop to your command.");
    }
    let PromptSource::Dataset {
        path: Some(path), ..
    } = prompts
    else {
        return usage("workload_trace requires --dataset-path pointing to a JSONL trace file.");
    };
    let args = workload_trace::parse_args(cli.dataset_args.as_ref())?;
    let requests = workload_trace::load(path, &args)?;
    let n = requests.len() as u64;
    fit_runs(runs, n);
    if cli.model.is_some() && args.model_override.is_none() && args.model_mapping.is_empty() {
        tracing::warn!(
            "workload_trace: --model {:?} does not rewrite trace bodies; each request keeps its own model. Use --dataset-args '{{\"model_override\": ...}}' or model_mapping to rewrite.",
            cli.model.as_deref().unwrap_or("")
        );
    }
    tracing::info!(
        "workload_trace: loaded {n} records, speed={}x",
        crate::pyjson::float_repr(args.speed)
    );
    if args.match_output_length {
        tracing::info!("workload_trace: match_output_length enabled — setting max_tokens from completion_tokens (requires ignore_eos support, e.g. vLLM)");
    }
    Ok(Some(Arc::new(requests)))
}
