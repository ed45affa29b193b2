//! `--dry-run [N]`: the plan and the first N request bodies of each run, built exactly as the run would
//! build them (same seed, same order; the first turn of each conversation with `--multi-turn`), and the
//! arrival offsets of the open-loop or paced schedule. Prints a summary (loads, endpoints, request id
//! header, prompt-length histogram, models) and writes the bodies as JSON lines — to `--dry-run-file`, or
//! stdout (then the summary goes to stderr). Starts no simulator or server, sends nothing (no connection
//! test), writes no run folder.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::Value;

use super::context::SweepContext;
use super::requests::RunRequests;
use crate::api::openai::BodyComposer;
use crate::dataset::Prompts;
use crate::engine::conversation::{turn_body, ConversationRun};
use crate::plan::{DryRun, RunPlan, RunSpec, Workload};
use crate::run_folder::RunRoot;
use crate::shard::Pick;
use crate::shutdown::Shutdown;

/// One body built, with what the summary reports of it.
struct Built {
    body: Arc<str>,
    warmup: bool,
    /// Prompt tokens the dataset means it to have, when it knows.
    prompt_tokens: Option<u64>,
    /// Arrival offset on the run's schedule, seconds.
    offset_s: Option<f64>,
}

/// Runs the dry run of `plan` over `items`.
pub fn dry_run(plan: &RunPlan, items: Prompts, dry: &DryRun) -> Result<()> {
    let tally = super::outcome::Tally::default();
    let sweep_seed = super::single::sweep_seed(plan);
    let monitors = super::monitor::Monitors::none();
    let ctx = SweepContext {
        tally: &tally,
        monitors: &monitors,
        seed: sweep_seed,
        plan,
        root: RunRoot::of(plan),
        url: plan.url.clone(),
        prompts: Arc::new(items),
        composer: BodyComposer::new(
            &plan.model,
            plan.params.clone(),
            plan.query_template.clone(),
        )
        .for_api(plan.api),
        shutdown: Shutdown::new(),
        visualizer: None,
    };
    let mut summary = header(plan);
    let mut lines = String::new();
    for (index, spec) in plan.runs.iter().enumerate() {
        let seed = super::single::run_seed(sweep_seed, plan.repeats.seed_index(spec.role, index));
        let built = bodies(&ctx, spec, seed, dry.bodies as usize)?;
        run_summary(&mut summary, &ctx, spec, index, &built);
        for b in &built {
            lines.push_str(&b.body);
            lines.push('\n');
        }
    }
    match &dry.file {
        Some(path) => {
            std::fs::write(path, &lines)
                .with_context(|| format!("--dry-run-file {}", path.display()))?;
            let _ = writeln!(summary, "Bodies written to {}", path.display());
            print!("{summary}");
        }
        None => {
            eprint!("{summary}");
            let mut out = std::io::stdout().lock();
            out.write_all(lines.as_bytes())
                .and_then(|()| out.flush())
                .context("writing the dry run's bodies to stdout")?;
        }
    }
    Ok(())
}

/// The first `n` bodies of run `spec` (seeded `seed`).
fn bodies(ctx: &SweepContext<'_>, spec: &RunSpec, seed: u64, n: usize) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    if n == 0 {
        return Ok(built);
    }
    match &ctx.plan.workload {
        Workload::MultiTurn(settings) => {
            let conversations = super::multi_turn::conversations(ctx, spec, seed)?;
            let run = ConversationRun {
                total: spec.total() as usize,
                warmup: spec.warmup as usize,
                parallel: 1,
                pacing: None,
                duration: None,
                max_turns: settings.max_turns,
                think_time: None,
                session_header: None,
                seed,
                models: ctx.plan.traffic.models.clone(),
                conversations,
            };
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
            for conv_index in 0..run.total.min(n) {
                let Some(conv) = run
                    .conversations
                    .get(conv_index % run.conversations.len().max(1))
                else {
                    break;
                };
                let Some(first) = conv.first() else { continue };
                let body = turn_body(
                    &ctx.composer,
                    &run,
                    conv_index,
                    (first, 0),
                    &first.messages,
                    first.rid.as_ref(),
                    &mut rng,
                );
                built.push(Built {
                    body,
                    warmup: conv_index < run.warmup,
                    prompt_tokens: None,
                    offset_s: None,
                });
            }
        }
        Workload::AgentGraph(_) => {
            anyhow::bail!(
                "--dry-run: --scenario agentx builds its bodies while it replays sessions"
            )
        }
        Workload::SingleTurn | Workload::WorkloadTrace(_) | Workload::Replay(_) => {
            let requests = RunRequests::new(ctx, spec, seed);
            let pick = Pick::all(requests.len(), requests.warmup());
            requests.produce(pick, &mut |r| {
                built.push(Built {
                    warmup: r.is_warmup,
                    prompt_tokens: r.intended_prompt_tokens,
                    offset_s: r.offset_s,
                    body: r.body,
                });
                if built.len() < n {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            })?;
        }
    }
    Ok(built)
}

/// The lines about the whole plan.
fn header(plan: &RunPlan) -> String {
    let mut s = String::from(
        "Dry run: nothing is sent, no simulator or server started, no run folder written.\n",
    );
    let urls = plan.traffic.urls(&plan.url);
    match &plan.traffic.endpoints {
        Some(e) => {
            let _ = writeln!(s, "Endpoints ({}):", e.strategy.name());
            for u in &urls {
                let _ = writeln!(s, "  {u}");
            }
        }
        None if plan.mock.is_some() => {
            let _ = writeln!(
                s,
                "Endpoint: the built-in simulator (--api mock), path {}",
                plan.url.path()
            );
        }
        None => {
            let _ = writeln!(s, "Endpoint: {}", plan.url);
        }
    }
    let _ = match &plan.traffic.request_id_header {
        Some(h) => writeln!(s, "Request id header: {h}"),
        None => writeln!(s, "Request id header: none"),
    };
    if let Some(mix) = &plan.traffic.models {
        let weights: Vec<String> = mix
            .models
            .iter()
            .zip(&mix.weights)
            .map(|(m, w)| format!("{m} {:.1}%", w * 100.0))
            .collect();
        let _ = writeln!(
            s,
            "Models ({}): {}",
            mix.assignment.name(),
            weights.join(", ")
        );
    }
    s
}

/// The summary of one run's bodies.
fn run_summary(
    s: &mut String,
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    index: usize,
    built: &[Built],
) {
    let plan = ctx.plan;
    let name = ctx
        .root
        .run(spec)
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let warmup = built.iter().filter(|b| b.warmup).count();
    let unit = match &plan.workload {
        Workload::MultiTurn(_) => "conversations",
        _ => "requests",
    };
    let _ = writeln!(
        s,
        "\nRun {}/{} {name}: {} {unit} ({} warmup); first {} bodies built ({warmup} warmup)",
        index + 1,
        plan.runs.len(),
        spec.total(),
        spec.warmup,
        built.len()
    );
    let (lengths, what) = prompt_lengths(built);
    histogram(s, &lengths, what);
    let mut models: BTreeMap<String, usize> = BTreeMap::new();
    for b in built {
        let model = serde_json::from_str::<Value>(&b.body)
            .ok()
            .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| "(none)".to_string());
        *models.entry(model).or_default() += 1;
    }
    let counts: Vec<String> = models.iter().map(|(m, c)| format!("{m} ×{c}")).collect();
    let _ = writeln!(s, "  models: {}", counts.join(", "));
    let offsets: Vec<f64> = built.iter().filter_map(|b| b.offset_s).collect();
    if let (Some(first), Some(last)) = (offsets.first(), offsets.last()) {
        let shown: Vec<String> = offsets.iter().take(10).map(|o| format!("{o:.3}")).collect();
        let more = if offsets.len() > 10 { ", …" } else { "" };
        let _ = writeln!(
            s,
            "  arrivals (s after the start): {}{more}; {} arrivals over {:.3} s",
            shown.join(", "),
            offsets.len(),
            last - first
        );
    }
}

/// Each body's prompt length: the dataset's intended prompt tokens when every body has one, else the
/// words of its prompt text (no tokenizer is run).
fn prompt_lengths(built: &[Built]) -> (Vec<u64>, &'static str) {
    if !built.is_empty() && built.iter().all(|b| b.prompt_tokens.is_some()) {
        return (
            built.iter().filter_map(|b| b.prompt_tokens).collect(),
            "prompt tokens",
        );
    }
    let words = built
        .iter()
        .map(|b| {
            let v: Value = serde_json::from_str(&b.body).unwrap_or(Value::Null);
            let mut n = 0;
            count_words(v.get("messages").unwrap_or(&Value::Null), &mut n);
            count_words(v.get("prompt").unwrap_or(&Value::Null), &mut n);
            count_words(v.get("input").unwrap_or(&Value::Null), &mut n);
            n
        })
        .collect();
    (words, "prompt words")
}

/// Adds the whitespace-separated words of every string in `v` (a token id counts one).
fn count_words(v: &Value, n: &mut u64) {
    match v {
        Value::String(t) => *n += t.split_whitespace().count() as u64,
        Value::Number(_) => *n += 1,
        Value::Array(items) => items.iter().for_each(|i| count_words(i, n)),
        Value::Object(m) => m
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "content" | "text"))
            .for_each(|(_, i)| count_words(i, n)),
        _ => {}
    }
}

/// A histogram of `values` in power-of-two buckets.
fn histogram(s: &mut String, values: &[u64], what: &str) {
    if values.is_empty() {
        return;
    }
    let min = values.iter().min().copied().unwrap_or(0);
    let max = values.iter().max().copied().unwrap_or(0);
    let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
    let _ = writeln!(s, "  {what}: min {min}, mean {mean:.1}, max {max}");
    let mut buckets: BTreeMap<u32, usize> = BTreeMap::new();
    for &v in values {
        *buckets.entry(64 - v.leading_zeros()).or_default() += 1;
    }
    let top = buckets.values().max().copied().unwrap_or(1);
    for (bits, count) in buckets {
        let (lo, hi) = match bits {
            0 => (0, 0),
            b => (1u64 << (b - 1), (1u64 << b) - 1),
        };
        let bar = "#".repeat((count * 40).div_ceil(top));
        let _ = writeln!(s, "    {lo:>7}-{hi:<7} {bar} {count}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_powers_of_two() {
        let mut s = String::new();
        histogram(&mut s, &[0, 1, 3, 3, 8], "prompt words");
        assert!(s.contains("min 0, mean 3.0, max 8"), "{s}");
        assert!(s.contains("      0-0       "), "{s}");
        assert!(
            s.contains("      2-3       ######################################## 2"),
            "{s}"
        );
        assert!(s.contains("      8-15      "), "{s}");
        let mut n = 0;
        count_words(
            &serde_json::json!([{"role": "user", "content": "a b c"}, {"content": [{"type": "text", "text": "d"}]}]),
            &mut n,
        );
        assert_eq!(n, 4);
    }
}
