//! Writing the merged run root: per run, the merged database and the files recomputed from it; then the
//! root's end-of-sweep text report and `perf_report.html`, through the same code a run uses.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::discover::ShardSet;
use super::rows::{merge_rows, ShardRows};
use super::MergeArgs;
use crate::error::UsageError;
use crate::export;
use crate::metrics::SummaryContext;
use crate::plan::{Load, RunRole, RunSpec};
use crate::run_folder::{RunDir, RunResults, RunRoot};
use crate::runner::RunResult;
use crate::shard::ARGS_KEY;

/// The checked shard set and where its merge goes.
pub struct MergePlan {
    set: ShardSet,
    root: RunRoot,
}

/// The merged root's name: `--name`, else the first shard's root name without `_shard<K>of<N>`.
fn root_name(args: &MergeArgs, set: &ShardSet) -> String {
    if let Some(n) = args.name.as_deref().filter(|n| !n.trim().is_empty()) {
        return crate::plan::sanitize_name(n);
    }
    let first = set
        .shards
        .values()
        .next()
        .expect("a checked set has a shard");
    let name = first
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged".into());
    RunRoot::unsharded_name(&name, set.count).to_string()
}

/// Decides the merged root; an existing one is an error (never overwritten).
pub fn target(args: &MergeArgs, set: ShardSet) -> Result<MergePlan, UsageError> {
    let root = RunRoot::compose(&args.outputs_dir, None, &root_name(args, &set), None);
    if root.path().exists() {
        return Err(UsageError(format!(
            "{} already exists: merge never overwrites a run root; choose another --outputs-dir or --name",
            root.path().display()
        )));
    }
    Ok(MergePlan { set, root })
}

fn input_only(api: &str) -> bool {
    matches!(
        api,
        "openai_embedding" | "embedding" | "openai_rerank" | "rerank"
    )
}

/// The merge record of a run's arguments file, and the shards that took part.
fn merge_record(set: &ShardSet, run: &str, missing: &[(u32, String)]) -> (Value, Vec<u32>) {
    let mut shards = Vec::new();
    let mut merged = Vec::new();
    let mut starts = Vec::new();
    for (k, root) in &set.shards {
        let Some(r) = root.runs.get(run).filter(|r| r.failure.is_none()) else {
            continue;
        };
        let rec = r.record();
        if let Some(t) = rec.get("started_at_epoch_s").and_then(Value::as_f64) {
            starts.push(t);
        }
        merged.push(*k);
        shards.push(json!({
            "index": k,
            "host": rec.get("host"),
            "source_dir": r.dir.to_string_lossy(),
            "requests": rec.get("requests"),
            "slots": rec.get("slots"),
            "started_at": rec.get("started_at"),
            "start_late_s": rec.get("start_late_s"),
            "clock": rec.get("clock"),
        }));
    }
    let skew = match (
        starts.iter().copied().reduce(f64::min),
        starts.iter().copied().reduce(f64::max),
    ) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let record = json!({
        "count": set.count,
        "plan_fingerprint": set.fingerprint,
        "start_skew_s": skew,
        "shards": shards,
        "missing": missing.iter().map(|(k, why)| json!({"index": k, "reason": why})).collect::<Vec<_>>(),
    });
    (record, merged)
}

/// The run a shard's arguments record (a sharded plan's runs are sweep runs).
fn spec_of(args: &Map<String, Value>, run: &str) -> Result<RunSpec> {
    let parallel = args.get("parallel").and_then(Value::as_i64).unwrap_or(-1);
    let rate = args.get("rate").and_then(Value::as_f64).unwrap_or(-1.0);
    let open_loop = args.get("open_loop").and_then(Value::as_bool) == Some(true);
    let number = args.get("number").and_then(Value::as_u64).unwrap_or(0);
    let load = Load::from_written(parallel, rate, number, open_loop).with_context(|| {
        format!("{run}: its arguments name no load (parallel {parallel}, rate {rate})")
    })?;
    Ok(RunSpec {
        number,
        load,
        warmup: 0,
        dataset_offset: args
            .get("dataset_offset")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        role: RunRole::Sweep,
    })
}

/// The summary settings a shard's arguments imply for one run.
fn summary_context(args: &Map<String, Value>, spec: &RunSpec) -> SummaryContext {
    let api = args.get("api").and_then(Value::as_str).unwrap_or("openai");
    SummaryContext {
        concurrency_as_written: spec.load.parallel_as_written(),
        rate_as_written: spec.load.rate_as_written(),
        input_only: input_only(api),
        pd_metrics: args
            .get("enable_pd_metrics")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// Merges one run of the plan into `<root>/<run>`.
fn merge_run(plan: &MergePlan, run: &str) -> Result<(RunResult, Map<String, Value>, Vec<u32>)> {
    let set = &plan.set;
    let missing = set.missing(run);
    let parts: Vec<(&u32, &super::discover::ShardRun)> = set
        .shards
        .iter()
        .filter_map(|(k, root)| {
            root.runs
                .get(run)
                .filter(|r| r.failure.is_none())
                .map(|r| (k, r))
        })
        .collect();
    let (_, first) = parts
        .first()
        .with_context(|| format!("{run}: no shard finished this run"))?;
    let mut args = first.args.clone();
    let spec = spec_of(&args, run)?;
    // The shards' own folder name (a replayed trace's keeps the --number typed, which its arguments lack).
    let dir = plan.root.run_named(run);
    dir.create()?;
    let hosts: Vec<String> = parts
        .iter()
        .map(|(_, r)| {
            r.record()
                .get("host")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let dbs: Vec<PathBuf> = parts
        .iter()
        .map(|(_, r)| RunDir::at(&r.dir).database())
        .collect();
    let shard_rows: Vec<ShardRows<'_>> = parts
        .iter()
        .zip(&dbs)
        .zip(&hosts)
        .map(|(((k, r), db), host)| ShardRows {
            db,
            index: **k,
            host,
            offset_s: r.wall_minus_monotonic_s.unwrap_or(0.0),
        })
        .collect();
    let ctx = summary_context(&args, &spec);
    let db_path = dir.database();
    let replayed = merge_rows(&db_path, &shard_rows, ctx)?;
    tracing::info!(
        "{run}: merged {} rows from {} shard(s) into {}",
        replayed.rows,
        parts.len(),
        db_path.display()
    );

    let (record, merged) = merge_record(set, run, &missing);
    args.remove(ARGS_KEY);
    args.insert("outputs_dir".into(), json!(dir.path().to_string_lossy()));
    args.insert("llmperf_merge".into(), record);
    dir.write_args(&args)?;

    let mut summary = replayed.acc.summary();
    let percentiles = replayed.acc.percentiles();
    (summary.extras.load, summary.extras.plateau) = load_verdict(&dir, &spec, &args);
    summary.extras.phases = crate::metrics::phases::summarize(&dir.database());
    // After every other key (the report shows them too).
    summary.extras.appended.extend([
        ("Shards".to_string(), json!(set.count)),
        ("Shards Merged".to_string(), json!(merged)),
        (
            "Shards Missing".to_string(),
            json!(missing.iter().map(|(k, _)| *k).collect::<Vec<_>>()),
        ),
    ]);
    dir.write_results(&RunResults {
        summary: &summary,
        percentiles: &percentiles,
        timeline: &replayed.timeline,
    })?;
    export::console::log_summary_tables(&summary, &percentiles);
    let workload = replayed.timeline.throughput();
    if let Some(w) = &workload {
        export::console::log_workload_table(w);
    }
    let dataset = args.get("dataset").and_then(Value::as_str).unwrap_or("");
    if matches!(dataset, "speed_benchmark" | "speed_benchmark_long") {
        crate::runner::write_speed_table(&dir)?;
    }
    for (k, why) in &missing {
        tracing::warn!("{run}: shard {k}/{} missing: {why}", set.count);
    }
    let result = RunResult {
        spec,
        summary,
        percentiles,
        interrupted: false,
        workload,
        dir,
        trace: Default::default(),
    };
    Ok((result, args, missing.iter().map(|(k, _)| *k).collect()))
}

/// Writes the merged root.
pub fn merge(plan: &MergePlan) -> Result<()> {
    plan.root.create()?;
    crate::logging::set_log_file(&plan.root.log()).with_context(|| {
        format!(
            "--outputs-dir: cannot write in {}",
            plan.root.path().display()
        )
    })?;
    tracing::info!(
        "Merging {} of {} shard(s) of plan {} into {}",
        plan.set.shards.len(),
        plan.set.count,
        plan.set.fingerprint,
        plan.root.path().display()
    );
    let mut results = Vec::new();
    let mut missing_lines = Vec::new();
    let mut last_args = Map::new();
    for run in &plan.set.run_names {
        let (result, args, missing) = merge_run(plan, run)?;
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(u32::to_string).collect();
            missing_lines.push(format!(
                "Shards Missing ({run}): {} of {}",
                list.join(", "),
                plan.set.count
            ));
        }
        results.push(result);
        last_args = args;
    }
    let text = |k: &str| last_args.get(k).and_then(Value::as_str).map(str::to_string);
    let url = text("url").unwrap_or_default();
    let endpoint = reqwest::Url::parse(&url)
        .ok()
        .map(|u| match u.port_or_known_default() {
            Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
            None => u.host_str().unwrap_or("").to_string(),
        })
        .unwrap_or_default();
    let api = text("api").unwrap_or_else(|| "openai".into());
    let info = export::report::ReportInfo {
        model: text("model").unwrap_or_default(),
        dataset: text("dataset").unwrap_or_default(),
        input_only: input_only(&api),
        api,
        alias: text("alias"),
        endpoint,
        output_path: plan.root.path().to_string_lossy().into_owned(),
    };
    crate::runner::write_root_report(&info, &plan.root, &results, false)?;
    if !missing_lines.is_empty() {
        let mut summary =
            std::fs::read_to_string(plan.root.performance_summary()).unwrap_or_default();
        for line in &missing_lines {
            println!("{line}");
            summary.push_str(line);
            summary.push('\n');
        }
        plan.root.write_performance_summary(&summary)?;
    }
    tracing::info!("Merged run root: {}", plan.root.path().display());
    Ok(())
}

/// What a merged run sent, from its shards' arguments.
fn sends(args: &Map<String, Value>) -> crate::runner::Sends {
    use crate::runner::Sends;
    if args.get("multi_turn") == Some(&Value::Bool(true)) {
        Sends::Conversations
    } else if args.get("scenario").is_some_and(|s| !s.is_null()) {
        Sends::Sessions
    } else {
        Sends::Requests
    }
}

/// The load verdict and the plateau of a merged run, over the union of its shards' rows
/// (docs/load-verdict.md): `--ramp-up` from the arguments (`ramp_up`, written when set); the shards' warmup
/// requests were never stored, so a merged run counts its measured rows only.
fn load_verdict(
    dir: &RunDir,
    spec: &crate::plan::RunSpec,
    args: &Map<String, Value>,
) -> (
    Option<crate::metrics::load::LoadVerdict>,
    Option<crate::metrics::load::Plateau>,
) {
    let ramp_s = args.get("ramp_up").and_then(Value::as_f64);
    let rules = (
        crate::runner::load_rule(spec, sends(args), ramp_s),
        crate::runner::plateau_rule(spec, sends(args), ramp_s),
    );
    crate::runner::judge_run(dir, rules, Vec::new(), &[])
}
