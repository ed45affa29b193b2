//! The `--scenario agentx` parts of a sweep: each run's session replay through the graph driver
//! ([`crate::engine::dag`]), and the files evalscope's scenario writes after normalising AIPerf's export —
//! `agentx_<variant>/parallel_<N>/agentx_summary.json` per run and `agentx_<variant>/agentx_sweep_summary.json`
//! — with evalscope's keys, their metrics (AIPerf's names and units) computed from the run's own
//! the run's database. llmperf's usual per-run files sit next to them (`raw_artifact_dir`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::context::{RunResult, SweepContext};
use crate::dataset::replay_prompt::PromptShape;
use crate::dataset::Item;
use crate::engine::dag::{self, BodiesFn, DagRun};
use crate::engine::{DispatchOutcome, HttpClient};
use crate::plan::{AgentxPlan, RunSpec};
use crate::record::RequestRecord;
use crate::run_folder::RunRoot;

/// Replays the sessions for one run.
pub(super) async fn dispatch(
    ctx: &SweepContext<'_>,
    agentx: &Arc<AgentxPlan>,
    client: &HttpClient,
    spec: &RunSpec,
    records: mpsc::Sender<RequestRecord>,
) -> Result<DispatchOutcome> {
    let shape = Arc::new(PromptShape {
        tokenizer: ctx.prompts.tokenizer.clone(),
        chat: ctx.plan.apply_chat_template,
        tokenize_prompt: ctx.plan.tokens.tokenize_prompt,
        template_kwargs: crate::dataset::template_kwargs(ctx.plan),
        seed: agentx.seed,
    });
    let composer = ctx.composer.clone();
    let plan = agentx.clone();
    let seed = agentx.seed;
    let models = ctx.plan.traffic.models.clone();
    let bodies: BodiesFn = Arc::new(move |i| {
        let built = crate::dataset::agentx::session_bodies(&plan.graphs[i], &shape)?;
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed ^ i as u64);
        // --lora-modules: one model per session (graph).
        let model = models.as_ref().map(|m| m.pick(seed, i as u64).clone());
        Ok(built
            .bodies
            .into_iter()
            .map(|b| composer.compose_as(&Item::Body(b), &mut rng, model.as_deref()))
            .collect())
    });
    let run = DagRun {
        graphs: Arc::new(agentx.graphs.clone()),
        bodies,
        parallel: spec.load.parallel().map_or(1, |p| p.get()),
        duration: crate::plan::agentx_duration(agentx),
        grace: agentx
            .scenario
            .benchmark_grace_period
            .map(std::time::Duration::from_secs_f64),
        session_header: None,
    };
    dag::run(client, run, records, &ctx.shutdown).await
}

/// One metric as evalscope's `AgentXMetric` dumps it: every declared key, `null` where not known.
fn metric(unit: &str, values: &mut [f64]) -> Value {
    let mut m = Map::new();
    m.insert("unit".into(), json!(unit));
    if values.is_empty() {
        for k in [
            "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
        ] {
            m.insert(k.into(), Value::Null);
        }
        m.insert("count".into(), json!(0));
        m.insert("sum".into(), Value::Null);
        return Value::Object(m);
    }
    values.sort_by(f64::total_cmp);
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let avg = sum / n;
    let var = values.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / n;
    // numpy's default (linear) percentile.
    let pct = |p: f64| {
        let rank = p / 100.0 * (n - 1.0);
        let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
        values[lo] + (values[hi] - values[lo]) * (rank - lo as f64)
    };
    m.insert("avg".into(), json!(avg));
    m.insert("min".into(), json!(values[0]));
    m.insert("max".into(), json!(values[values.len() - 1]));
    m.insert("std".into(), json!(var.sqrt()));
    for p in [1, 5, 10, 25, 50, 75, 90, 95, 99] {
        m.insert(format!("p{p}"), json!(pct(f64::from(p))));
    }
    m.insert("count".into(), json!(values.len()));
    m.insert("sum".into(), json!(sum));
    Value::Object(m)
}

/// A single-valued metric (`avg` only).
fn scalar(unit: &str, avg: f64) -> Value {
    let mut v = metric(unit, &mut []);
    v["avg"] = json!(avg);
    v["count"] = Value::Null;
    v
}

/// The run's metrics under AIPerf's names, and its error summary, from the run's database.
/// llmperf's replay fidelity (`replay`, after evalscope's keys): each call's send time against the time the
/// graph made it due, and the share of prompt tokens the server reported cached.
fn metrics_from_db(db: &Path) -> Result<(Map<String, Value>, Vec<Value>, Value)> {
    let conn =
        rusqlite::Connection::open(db).with_context(|| format!("opening {}", db.display()))?;
    let mut stmt = conn.prepare(
        "SELECT success, latency, first_chunk_latency, prompt_tokens, completion_tokens, \
         time_per_output_token, start_time, completed_time, error, scheduled_time, send_time, \
         cached_tokens FROM result",
    )?;
    let (mut latency, mut ttft, mut itl, mut per_user, mut isl, mut osl) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut ok, mut failed, mut first, mut last) = (0u64, 0u64, f64::INFINITY, 0f64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let (mut lag_ms, mut cache) = (Vec::new(), (0i64, 0i64));
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let start: f64 = r.get(6)?;
        let end: f64 = r.get(7)?;
        first = first.min(start);
        last = last.max(end);
        if let (Some(at), Some(sent)) = (r.get::<_, Option<f64>>(9)?, r.get::<_, Option<f64>>(10)?)
        {
            lag_ms.push((sent - at) * 1000.0);
        }
        if r.get::<_, i64>(0)? != 1 {
            failed += 1;
            let e: Option<String> = r.get(8)?;
            *errors
                .entry(e.unwrap_or_else(|| "unknown".into()))
                .or_default() += 1;
            continue;
        }
        ok += 1;
        latency.extend(r.get::<_, Option<f64>>(1)?.map(|v| v * 1000.0));
        ttft.extend(
            r.get::<_, Option<f64>>(2)?
                .filter(|&v| v > 0.0)
                .map(|v| v * 1000.0),
        );
        let prompt = r.get::<_, Option<i64>>(3)?;
        isl.extend(prompt.map(|v| v as f64));
        if let (Some(p), Some(c)) = (prompt, r.get::<_, Option<i64>>(11)?) {
            cache.0 += c;
            cache.1 += p;
        }
        let out = r.get::<_, Option<i64>>(4)?.unwrap_or(0);
        osl.push(out as f64);
        if let Some(t) = r.get::<_, Option<f64>>(5)?.filter(|&t| t > 0.0 && out > 1) {
            itl.push(t * 1000.0);
            per_user.push(1.0 / t);
        }
    }
    let window_s = if last > first { last - first } else { 0.0 };
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let total_out: f64 = osl.iter().sum();
    let mut m = Map::new();
    m.insert(
        "request_throughput".into(),
        scalar("requests/sec", per_s(ok as f64)),
    );
    m.insert("request_latency".into(), metric("ms", &mut latency));
    m.insert("time_to_first_token".into(), metric("ms", &mut ttft));
    m.insert("inter_token_latency".into(), metric("ms", &mut itl));
    m.insert(
        "output_token_throughput_per_user".into(),
        metric("tokens/sec/user", &mut per_user),
    );
    m.insert("input_sequence_length".into(), metric("tokens", &mut isl));
    m.insert("output_sequence_length".into(), metric("tokens", &mut osl));
    m.insert(
        "output_token_throughput".into(),
        scalar("tokens/sec", per_s(total_out)),
    );
    m.insert("request_count".into(), scalar("requests", ok as f64));
    m.insert(
        "error_request_count".into(),
        scalar("requests", failed as f64),
    );
    m.insert("benchmark_duration".into(), scalar("sec", window_s));
    let errors = errors
        .into_iter()
        .map(|(message, count)| json!({"message": message, "count": count}))
        .collect();
    let replay = json!({
        "send_lag_ms": metric("ms", &mut lag_ms),
        "server_cached_tokens_pct": (cache.1 > 0).then(|| 100.0 * cache.0 as f64 / cache.1 as f64),
    });
    Ok((m, errors, replay))
}

/// evalscope's per-GPU metrics (`num_gpus`).
fn derived(metrics: &Map<String, Value>, num_gpus: Option<u64>) -> Map<String, Value> {
    let mut d = Map::new();
    let Some(gpus) = num_gpus else { return d };
    for name in ["request_throughput", "output_token_throughput"] {
        let Some(avg) = metrics[name]["avg"].as_f64() else {
            continue;
        };
        let mut v = scalar(
            &format!("{}/GPU", metrics[name]["unit"].as_str().unwrap_or("")),
            avg / gpus as f64,
        );
        v["source_metric"] = json!(name);
        v["divisor"] = json!(gpus);
        v["derived_by"] = json!("llmperf");
        d.insert(format!("{name}_per_gpu"), v);
    }
    d
}

/// The command line, with `--api-key` and authorization headers masked.
fn redacted_command() -> Vec<String> {
    let mut out = Vec::new();
    let mut mask_next = false;
    for a in std::env::args() {
        if mask_next {
            out.push("<redacted>".to_string());
            mask_next = false;
        } else if a == "--api-key" {
            out.push(a);
            mask_next = true;
        } else if a.to_ascii_lowercase().contains("authorization") || a.starts_with("--api-key=") {
            out.push("<redacted>".to_string());
        } else {
            out.push(a);
        }
    }
    out
}

/// One run's `agentx_summary.json` (evalscope's `AgentXRunSummary` keys, in order).
fn run_summary(agentx: &AgentxPlan, result: &RunResult) -> Result<Value> {
    let (metrics, errors, replay) = metrics_from_db(&result.dir.database())?;
    let derived = derived(&metrics, agentx.scenario.num_gpus);
    let status = if result.interrupted {
        "cancelled"
    } else {
        "completed"
    };
    Ok(json!({
        "schema_version": "1.0",
        "status": status,
        "scenario": agentx.scenario.to_json(),
        "concurrency": result.spec.load.parallel_as_written(),
        "duration": agentx.duration_s,
        "seed": agentx.seed,
        "aiperf_version": null,
        "aiperf_schema_version": null,
        "dataset": agentx.provenance.to_json(),
        "submission_valid": false,
        "aiperf_submission_valid": null,
        "aiperf_submission_invalid_reasons": [],
        "mirror_revalidated": false,
        "metrics": metrics,
        "derived_metrics": derived,
        "error_summary": errors,
        "raw_artifact_dir": result.dir.path().to_string_lossy(),
        "raw_summary_file": result.dir.summary().to_string_lossy(),
        "command": redacted_command(),
        "replay_engine": format!("llmperf {}", env!("CARGO_PKG_VERSION")),
        "replay": replay,
    }))
}

/// Writes each run's `agentx_summary.json` and the sweep's `agentx_sweep_summary.json`, and logs evalscope's
/// one-line summary per run.
pub(super) fn write_summaries(
    root: &RunRoot,
    agentx: &AgentxPlan,
    results: &[RunResult],
) -> Result<()> {
    let mut sweep = Map::new();
    for result in results {
        let summary = run_summary(agentx, result)?;
        result.dir.write_agentx_summary(&summary)?;
        let highlights: Vec<String> = [
            "request_throughput",
            "output_token_throughput",
            "output_token_throughput_per_user",
            "time_to_first_token",
            "inter_token_latency",
            "request_latency",
            "request_count",
            "error_request_count",
        ]
        .iter()
        .filter_map(|name| {
            let m = &summary["metrics"][name];
            m["avg"].as_f64().map(|avg| {
                format!(
                    "{name}={} {}",
                    crate::pyjson::float_repr(avg),
                    m["unit"].as_str().unwrap_or("")
                )
            })
        })
        .collect();
        let key = format!("parallel_{}", result.spec.load.parallel_as_written());
        tracing::info!(
            "AgentX {key}: submission_valid={}; {}",
            if summary["submission_valid"] == true {
                "True"
            } else {
                "False"
            },
            highlights.join(", ")
        );
        sweep.insert(key, summary);
    }
    root.write_agentx_sweep_summary(agentx.scenario.variant.as_str(), &Value::Object(sweep))
}
