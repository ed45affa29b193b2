//! What an SLA auto-tune writes and prints, as evalscope 1.14.1 does: `sla_summary.json` (one
//! `"<var>_<value>"` entry per probe, in probe order, each the averaged `{"metrics", "percentiles"}`,
//! `json.dump(indent=4)`), the `SLA Auto-tune Summary` tables (`Probes`, `Selections`, tabulate's
//! `simple_grid`), and the inputs of the end-of-sweep text report (the averaged probes as runs).
//!
//! llmperf's extras, only with `--sla-confidence` and always after evalscope's keys: per probe `Runs`,
//! `Metric Runs` (each run's value of every SLA metric) and `Metric Spread` (mean, standard deviation,
//! the confidence interval of the mean, the decision); at the end, `Confidence Selections`.

use serde_json::{Map, Value};

use super::confidence::Decision;
use super::probe::Probe;
use super::tuner::Selection;
use crate::export::report::RunReport;
use crate::metrics::{BenchmarkSummary, PercentileTable, PERCENTILE_LABELS};
use crate::plan::sla::SlaPlan;
use crate::pyjson::{to_string_with, PyFormatter};
use crate::stats::spread;
use crate::text::table::{display_width, pad, Align};

/// The exact text of `sla_summary.json`.
pub fn summary_json(plan: &SlaPlan, probes: &[Probe], selections: &[Selection]) -> String {
    let mut root = Map::new();
    for p in probes {
        let mut entry = p.averaged();
        if let Some(level) = plan.confidence {
            add_spread(&mut entry, plan, p, level);
        }
        root.insert(
            format!("{}_{}", plan.variable.name(), p.value),
            Value::Object(entry),
        );
    }
    if plan.confidence.is_some() {
        let list: Vec<Value> = selections.iter().map(selection_json).collect();
        root.insert("Confidence Selections".into(), Value::Array(list));
    }
    to_string_with(&root, PyFormatter::indent4().nan_for_null())
}

fn add_spread(entry: &mut Map<String, Value>, plan: &SlaPlan, p: &Probe, level: f64) {
    entry.insert("Runs".into(), p.runs.len().into());
    let mut runs = Map::new();
    let mut spreads = Map::new();
    for group in &plan.groups {
        for (name, c) in group {
            let values = p.run_values(name);
            runs.insert(
                name.clone(),
                Value::from(values.iter().map(|v| float(*v)).collect::<Vec<_>>()),
            );
            let s = spread(&values, level);
            let decision = match super::confidence::decide(&values, c, level) {
                Decision::Pass => "pass",
                Decision::Fail => "fail",
                Decision::Undecided => "undecided",
            };
            let mut m = Map::new();
            m.insert("Mean".into(), float(s.mean));
            m.insert("Stdev".into(), float(s.stdev));
            m.insert("CI Low".into(), float(s.low));
            m.insert("CI High".into(), float(s.high));
            m.insert("Decision".into(), decision.into());
            spreads.insert(name.clone(), Value::Object(m));
        }
    }
    entry.insert("Metric Runs".into(), Value::Object(runs));
    entry.insert("Metric Spread".into(), Value::Object(spreads));
}

fn selection_json(s: &Selection) -> Value {
    let mut m = Map::new();
    let criteria: Vec<String> = s.criteria.iter().map(|(k, t)| format!("{k} {t}")).collect();
    m.insert("Criteria".into(), criteria.join(", ").into());
    let (low, high) = s.interval.unwrap_or((None, None));
    m.insert(
        "Largest Confident Pass".into(),
        low.map_or(Value::String("None".into()), Value::from),
    );
    m.insert(
        "Smallest Confident Fail".into(),
        high.map_or(Value::String("None".into()), Value::from),
    );
    m.insert("Reason".into(), s.reason.clone().into());
    Value::Object(m)
}

fn float(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A cell of a tabulate table: its text, and whether tabulate would read it as a number.
struct Cell(String, bool);

fn text(s: impl Into<String>) -> Cell {
    Cell(s.into(), false)
}

fn int(v: i64) -> Cell {
    Cell(v.to_string(), true)
}

/// tabulate's `simple_grid` (headers, a rule between every row; numeric columns right-aligned).
fn simple_grid(headers: &[&str], rows: &[Vec<Cell>]) -> String {
    let n = headers.len();
    let numeric: Vec<bool> = (0..n)
        .map(|i| !rows.is_empty() && rows.iter().all(|r| r[i].1))
        .collect();
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| display_width(&r[i].0))
                .fold(display_width(headers[i]) + 2, usize::max)
        })
        .collect();
    let rule = |l: &str, m: &str, r: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("{l}{}{r}", parts.join(m))
    };
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let align = if numeric[i] {
                    Align::Right
                } else {
                    Align::Left
                };
                pad(c, widths[i], align)
            })
            .collect();
        format!("│ {} │", parts.join(" │ "))
    };
    let mut out = vec![
        rule("┌", "┬", "┐"),
        line(headers.to_vec()),
        rule("├", "┼", "┤"),
    ];
    for (k, row) in rows.iter().enumerate() {
        if k > 0 {
            out.push(rule("├", "┼", "┤"));
        }
        out.push(line(row.iter().map(|c| c.0.as_str()).collect()));
    }
    out.push(rule("└", "┴", "┘"));
    out.join("\n")
}

/// `Probes:` and `Selections:` tables (evalscope's `format_sla_tables(tablefmt='simple_grid')`).
pub fn tables(probes: &[Probe], selections: &[Selection]) -> String {
    let probe_rows: Vec<Vec<Cell>> = probes
        .iter()
        .map(|p| {
            let groups: Vec<String> = p
                .group_passes
                .iter()
                .enumerate()
                .map(|(i, ok)| format!("{}:{}", i + 1, if *ok { "PASS" } else { "FAIL" }))
                .collect();
            vec![
                int(p.value),
                text(format!("{}/{}", p.succeeded_requests, p.total_requests)),
                text(if p.valid() { "VALID" } else { "FAILED" }),
                text(if groups.is_empty() {
                    "-".into()
                } else {
                    groups.join(", ")
                }),
                text(if p.reasons.is_empty() {
                    "-".into()
                } else {
                    p.reasons.join(", ")
                }),
            ]
        })
        .collect();
    let selection_rows: Vec<Vec<Cell>> = selections
        .iter()
        .map(|s| {
            let criteria: Vec<String> =
                s.criteria.iter().map(|(k, t)| format!("{k} {t}")).collect();
            vec![
                text(criteria.join(", ")),
                s.selected.map_or(text("None"), int),
                text(s.status()),
                text(s.reason.clone()),
            ]
        })
        .collect();
    let probes = simple_grid(
        &[
            "Pressure",
            "Succeeded/Total",
            "Run status",
            "Groups",
            "Reason",
        ],
        &probe_rows,
    );
    let selections = simple_grid(
        &["Criteria", "Selected", "Status", "Reason"],
        &selection_rows,
    );
    format!("Probes:\n{probes}\n\nSelections:\n{selections}")
}

/// llmperf's interval table (`--sla-confidence`): one row per group.
pub fn interval_table(selections: &[Selection], level: f64) -> String {
    let rows: Vec<Vec<Cell>> = selections
        .iter()
        .map(|s| {
            let criteria: Vec<String> =
                s.criteria.iter().map(|(k, t)| format!("{k} {t}")).collect();
            let (lo, hi) = s.interval.unwrap_or((None, None));
            vec![
                text(criteria.join(", ")),
                lo.map_or(text("None"), int),
                hi.map_or(text("None"), int),
            ]
        })
        .collect();
    let pct = crate::pyjson::float_repr(level * 100.0);
    format!(
        "Limit with {}% confidence:\n{}",
        pct.strip_suffix(".0").unwrap_or(&pct),
        simple_grid(&["Criteria", "Largest pass", "Smallest fail"], &rows)
    )
}

/// The averaged summary map as a summary (what `BenchmarkSummary.from_dict` reads).
fn summary_from_map(m: &Map<String, Value>) -> BenchmarkSummary {
    let f = |k: &str| m.get(k).and_then(Value::as_f64);
    let n = |k: &str| f(k).map_or(0, |v| v.max(0.0) as u64);
    BenchmarkSummary {
        test_duration_s: f("Test Duration (s)").unwrap_or(0.0),
        concurrency: f("Concurrency").unwrap_or(0.0) as i64,
        request_rate: f("Request Rate (req/s)").unwrap_or(-1.0),
        total_requests: n("Total Requests"),
        success_requests: n("Success Requests"),
        failed_requests: n("Failed Requests"),
        stream_requests: n("Stream Requests"),
        non_stream_requests: n("Non-Stream Requests"),
        req_throughput: f("Req Throughput (req/s)").unwrap_or(0.0),
        avg_latency_s: f("Avg Latency (s)").unwrap_or(0.0),
        avg_input_tokens: f("Avg Input Tokens").unwrap_or(0.0),
        output_throughput: f("Output Throughput (tok/s)").unwrap_or(0.0),
        total_throughput: f("Total Throughput (tok/s)").unwrap_or(0.0),
        avg_ttft_ms: f("Avg TTFT (ms)").unwrap_or(0.0),
        avg_tpot_ms: f("Avg TPOT (ms)").unwrap_or(0.0),
        avg_itl_ms: f("Avg ITL (ms)").unwrap_or(0.0),
        avg_output_tokens: f("Avg Output Tokens").unwrap_or(0.0),
        input_throughput: f("Input Throughput (tok/s)").unwrap_or(0.0),
        kv_cache_hit_rate_pct: f("KV Cache Hit Rate (%)"),
        avg_decoded_tokens_per_iter: f("Avg Decoded Tok/Iter"),
        spec_accept_rate: f("Spec. Accept Rate"),
        avg_turns: f("Avg Turns/Request"),
        avg_first_turn_ttft_ms: f("Avg First-Turn TTFT (ms)"),
        avg_later_turn_ttft_ms: f("Avg Subsequent-Turn TTFT (ms)"),
        avg_steady_itl_ms: f("Avg Steady ITL (ms)"),
        avg_pd_handoff_latency_ms: f("Avg PD Handoff Latency (ms)"),
        avg_pd_handoff_overhead_ms: f("Avg PD Handoff Overhead (ms)"),
        extras: Default::default(),
    }
}

/// The averaged percentile columns as a table.
fn percentiles_from_map(m: &Map<String, Value>) -> PercentileTable {
    let columns = m
        .iter()
        .filter(|(k, _)| k.as_str() != "Percentiles")
        .filter_map(|(k, v)| {
            let list = v.as_array()?;
            let mut values = [f64::NAN; 11];
            for (i, slot) in values.iter_mut().enumerate().take(PERCENTILE_LABELS.len()) {
                *slot = list.get(i).and_then(Value::as_f64).unwrap_or(f64::NAN);
            }
            Some((k.clone(), values))
        })
        .collect();
    PercentileTable { columns }
}

/// The probes as runs of the end-of-sweep text report (their averaged results).
pub fn report_runs(probes: &[Probe]) -> Vec<RunReport> {
    probes
        .iter()
        .map(|p| {
            let avg = p.averaged();
            let empty = Map::new();
            let metrics = avg
                .get("metrics")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let pct = avg
                .get("percentiles")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let summary = summary_from_map(metrics);
            let (concurrency, rate) = RunReport::load_of(&summary);
            RunReport {
                concurrency,
                rate,
                number: summary.total_requests,
                percentiles: percentiles_from_map(pct),
                summary,
                workload: None,
                trace: Default::default(),
            }
        })
        .collect()
}
