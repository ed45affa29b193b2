//! JSON for programs: the inputs, the result, and per point every metric (values, relative and absolute
//! change with their intervals — `null` for an end the data cannot bound — method, verdict, note) and
//! every gate's outcome.

use serde_json::{json, Value};

use super::super::gate::Outcome;
use super::super::side::PointKey;
use super::super::verdict::{Method, MetricResult};
use super::super::Report;
use crate::stats::Change;

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn change(c: &Change) -> (Value, Value) {
    (
        num(c.point),
        c.interval
            .map_or(Value::Null, |i| json!([num(i.low), num(i.high)])),
    )
}

fn point_key(k: &PointKey) -> Value {
    json!({
        "parallel": k.load.parallel_as_written(),
        "rate": k.load.rate_as_written(),
        "number": k.number,
    })
}

fn metric(m: &MetricResult) -> Value {
    let (rel, rel_i) = change(&m.changes.relative);
    let (abs, abs_i) = change(&m.changes.absolute);
    let method = match m.method {
        Method::Rows => "rows",
        Method::Repeats { .. } => "repeats",
    };
    json!({
        "metric": m.metric.to_string(),
        "unit": m.metric.quantity.unit(),
        "base": m.base.map_or(Value::Null, num),
        "new": m.new.map_or(Value::Null, num),
        "change": rel,
        "interval": rel_i,
        "change_abs": abs,
        "interval_abs": abs_i,
        "method": method,
        "verdict": m.verdict.as_str(),
        "note": m.note,
    })
}

/// The JSON text of `report` (pretty-printed, with a final newline).
pub fn render(report: &Report) -> String {
    let points: Vec<Value> = report
        .points
        .iter()
        .map(|p| {
            let mut o = point_key(&p.key);
            o["base_runs"] = json!(p.base_runs);
            o["new_runs"] = json!(p.new_runs);
            o["metrics"] = p.metrics.iter().map(metric).collect();
            o["gates"] = p
                .gates
                .iter()
                .map(|g| {
                    json!({
                        "gate": report.gates[g.gate].spec,
                        "outcome": match g.outcome {
                            Outcome::Pass => "pass",
                            Outcome::Fail => "fail",
                            Outcome::Inconclusive => "inconclusive",
                        },
                        "fails": g.fails,
                    })
                })
                .collect();
            o
        })
        .collect();
    let failures = report.failures().len();
    let v = json!({
        "base": report.base.display().to_string(),
        "new": report.new.display().to_string(),
        "level": super::super::verdict::LEVEL,
        "strict": report.strict,
        "gates": report.gates.iter().map(|g| g.spec.clone()).collect::<Vec<_>>(),
        "gated_failures": failures,
        "regression": failures > 0,
        "points": points,
        "only_base": report.only_base.iter().map(point_key).collect::<Vec<_>>(),
        "only_new": report.only_new.iter().map(point_key).collect::<Vec<_>>(),
        "warnings": report.warnings,
    });
    let mut text = serde_json::to_string_pretty(&v).expect("JSON of plain values");
    text.push('\n');
    text
}
