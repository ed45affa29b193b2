//! `--repeat`: once the last repeat of a point has run, the point's repeat summary — for every run-level
//! metric (each numeric key of the run's summary, and the 50 %, 90 % and 99 % rows of its percentile
//! table) the runs' values, mean, standard deviation, coefficient of variation and 95 % Student-t interval
//! of the mean — written beside the point's folder.

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::context::{RunResult, SweepContext};
use crate::metrics::PERCENTILE_LABELS;
use crate::plan::{RunRole, RunSpec};
use crate::stats::spread;

/// The confidence level of the intervals.
const LEVEL: f64 = 0.95;

/// The percentile rows summarised.
const ROWS: [&str; 3] = ["50%", "90%", "99%"];

/// Whether `spec` is a run of the point `point` (repeat 1 or a later one).
fn of_point(spec: &RunSpec, point: &RunSpec) -> bool {
    matches!(spec.role, RunRole::Sweep | RunRole::Repeat { .. })
        && spec.load == point.load
        && spec.number == point.number
}

/// Each run-level metric's values over `runs`, in the summary's key order, then the percentile rows.
fn values(runs: &[&RunResult]) -> Vec<(String, Vec<f64>)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    let mut add = |key: String, v: f64| match out.iter_mut().find(|(k, _)| *k == key) {
        Some((_, vs)) => vs.push(v),
        None => out.push((key, vec![v])),
    };
    for r in runs {
        if let Ok(Value::Object(m)) = serde_json::to_value(&r.summary) {
            for (k, v) in m {
                if let Some(x) = v.as_f64().filter(|x| x.is_finite()) {
                    add(k, x);
                }
            }
        }
        for (column, cells) in &r.percentiles.columns {
            for row in ROWS {
                let i = PERCENTILE_LABELS.iter().position(|l| *l == row);
                if let Some(x) = i.map(|i| cells[i]).filter(|x| x.is_finite()) {
                    add(format!("{column} {row}"), x);
                }
            }
        }
    }
    out
}

/// The summary of `runs`, the repeats of the point `point` in order.
fn summary(ctx: &SweepContext<'_>, point: &RunSpec, runs: &[&RunResult]) -> Value {
    let mut metrics = Map::new();
    for (key, vs) in values(runs) {
        let s = spread(&vs, LEVEL);
        let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
        metrics.insert(
            key,
            json!({
                "values": vs,
                "mean": num(s.mean),
                "stdev": num(s.stdev),
                "cv": num(s.cv()),
                "ci95_low": num(s.low),
                "ci95_high": num(s.high),
            }),
        );
    }
    let folders: Vec<String> = runs
        .iter()
        .map(|r| {
            r.dir
                .path()
                .strip_prefix(ctx.root.path())
                .unwrap_or(r.dir.path())
                .display()
                .to_string()
        })
        .collect();
    json!({
        "point": point.as_flags(),
        "repeats": runs.len(),
        "new_prompts": ctx.plan.repeats.new_prompts,
        "level": LEVEL,
        "runs": folders,
        "metrics": metrics,
    })
}

/// After a run: when it was the last repeat of its point, writes the point's repeat summary.
pub(super) fn after_run(ctx: &SweepContext<'_>, results: &[RunResult]) -> Result<()> {
    let count = ctx.plan.repeats.count;
    let Some(last) = results.last() else {
        return Ok(());
    };
    let RunRole::Repeat { repeat, point } = last.spec.role else {
        return Ok(());
    };
    if repeat != count || last.interrupted {
        return Ok(());
    }
    let Some(point_spec) = ctx.plan.runs.get(point) else {
        return Ok(());
    };
    let runs: Vec<&RunResult> = results
        .iter()
        .filter(|r| of_point(&r.spec, point_spec))
        .collect();
    let path = ctx.root.repeat_summary(point_spec);
    ctx.root
        .write_repeat_summary(point_spec, &summary(ctx, point_spec, &runs))?;
    tracing::info!(
        "Repeat summary of {} ({} runs): {}",
        point_spec.as_flags(),
        runs.len(),
        path.display()
    );
    Ok(())
}
