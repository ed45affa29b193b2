//! Writing the merged run root: per run, the merged database and the files recomputed from it; then the
//! root's `performance_summary.txt` and `perf_report.html`, through the same code a run uses.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::discover::ShardSet;
use super::rows::{merge_rows, ShardRows};
use super::MergeArgs;
use crate::export;
use crate::metrics::SummaryContext;
use crate::plan::RunSpec;
use crate::pyjson;
use crate::runner::RunResult;
use crate::shard::ARGS_KEY;

/// The checked shard set and where its merge goes.
pub struct MergePlan {
    set: ShardSet,
    root: PathBuf,
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
    match name.rfind("_shard") {
        Some(i) if name[i..].ends_with(&format!("of{}", set.count)) => name[..i].to_string(),
        _ => name,
    }
}

/// Decides the merged root; an existing one is an error (never overwritten).
pub fn target(args: &MergeArgs, set: ShardSet) -> Result<MergePlan, String> {
    let root = args.outputs_dir.join(root_name(args, &set));
    if root.exists() {
        return Err(format!(
            "{} already exists: merge never overwrites a run root; choose another --outputs-dir or --name",
            root.display()
        ));
    }
    Ok(MergePlan { set, root })
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn input_only(api: &str) -> bool {
    matches!(
        api,
        "openai_embedding" | "embedding" | "openai_rerank" | "rerank"
    )
}

/// The merge record of a run's `benchmark_args.json`, and the shards that took part.
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

fn spec_of(args: &Map<String, Value>, dir_name: &str) -> RunSpec {
    RunSpec {
        number: args.get("number").and_then(Value::as_u64).unwrap_or(0),
        parallel: args.get("parallel").and_then(Value::as_i64).unwrap_or(-1),
        rate: args.get("rate").and_then(Value::as_f64).unwrap_or(-1.0),
        warmup: 0,
        dir_name: dir_name.to_string(),
        dataset_offset: args
            .get("dataset_offset")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    }
}

/// The summary settings a shard's `benchmark_args.json` implies for one run.
fn summary_context(args: &Map<String, Value>, spec: &RunSpec) -> SummaryContext {
    let api = args.get("api").and_then(Value::as_str).unwrap_or("openai");
    SummaryContext {
        concurrency: spec.parallel,
        request_rate: spec.rate,
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
    let run_dir = plan.root.join(run);
    std::fs::create_dir_all(&run_dir).with_context(|| format!("creating {}", run_dir.display()))?;
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
        .map(|(_, r)| r.dir.join("benchmark_data.db"))
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
    let mut args = first.args.clone();
    let spec = spec_of(&args, run);
    let ctx = summary_context(&args, &spec);
    let db_path = run_dir.join("benchmark_data.db");
    let replayed = merge_rows(&db_path, &shard_rows, ctx)?;
    tracing::info!(
        "{run}: merged {} rows from {} shard(s) into {}",
        replayed.rows,
        parts.len(),
        db_path.display()
    );

    let (record, merged) = merge_record(set, run, &missing);
    args.remove(ARGS_KEY);
    args.insert("outputs_dir".into(), json!(run_dir.to_string_lossy()));
    args.insert("llmperf_merge".into(), record);
    write_file(
        &run_dir.join("benchmark_args.json"),
        &pyjson::dumps_indent4(&args),
    )?;

    let mut summary = replayed.acc.summary();
    let percentiles = replayed.acc.percentiles();
    // After every other key (the report shows them too).
    summary.extras.appended.extend([
        ("Shards".to_string(), json!(set.count)),
        ("Shards Merged".to_string(), json!(merged)),
        (
            "Shards Missing".to_string(),
            json!(missing.iter().map(|(k, _)| *k).collect::<Vec<_>>()),
        ),
    ]);
    write_file(
        &run_dir.join("benchmark_summary.json"),
        &summary.to_json_string(),
    )?;
    write_file(
        &run_dir.join("benchmark_percentile.json"),
        &percentiles.to_json_string(),
    )?;
    tracing::info!("\n{}", export::console::summary_table(&summary));
    tracing::info!("\n{}", export::console::percentile_table(&percentiles));
    let workload = replayed.timeline.throughput();
    if let Some(w) = &workload {
        write_file(
            &run_dir.join("workload_throughput.json"),
            &w.to_json_string(),
        )?;
        write_file(
            &run_dir.join("workload_timeline.json"),
            &replayed.timeline.to_json_string(),
        )?;
        tracing::info!("\n{}", export::console::workload_table(w));
    }
    let dataset = args.get("dataset").and_then(Value::as_str).unwrap_or("");
    if matches!(dataset, "speed_benchmark" | "speed_benchmark_long") {
        export::speed_benchmark::write(&db_path, &run_dir)?;
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
        run_dir,
        trace: Default::default(),
    };
    Ok((result, args, missing.iter().map(|(k, _)| *k).collect()))
}

/// Writes the merged root.
pub fn merge(plan: &MergePlan) -> Result<()> {
    std::fs::create_dir_all(&plan.root)
        .with_context(|| format!("--outputs-dir: cannot create {}", plan.root.display()))?;
    crate::logging::set_log_file(&plan.root.join("benchmark.log"))
        .with_context(|| format!("--outputs-dir: cannot write in {}", plan.root.display()))?;
    tracing::info!(
        "Merging {} of {} shard(s) of plan {} into {}",
        plan.set.shards.len(),
        plan.set.count,
        plan.set.fingerprint,
        plan.root.display()
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
        output_path: plan.root.to_string_lossy().into_owned(),
    };
    crate::runner::write_root_report(&info, &plan.root, &results, false)?;
    if !missing_lines.is_empty() {
        let path = plan.root.join("performance_summary.txt");
        let mut summary = std::fs::read_to_string(&path).unwrap_or_default();
        for line in &missing_lines {
            println!("{line}");
            summary.push_str(line);
            summary.push('\n');
        }
        write_file(&path, &summary)?;
    }
    tracing::info!("Merged run root: {}", plan.root.display());
    Ok(())
}
