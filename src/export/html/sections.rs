//! The table sections of `perf_report.html`: basic information, overview, workload throughput, client
//! self-diagnostics (llmperf's extra summary keys, whatever they are) and failures by kind. Every table has
//! a caption and header scopes, inside a keyboard-focusable scroll region.

use std::fmt::Write;

use serde_json::Value;

use super::svg;
use super::view::RunView;
use super::{esc, HtmlHeader};
use crate::text::format::Unit;

/// evalscope's summary keys; every other key of the run's summary file is one of llmperf's extras.
const EVALSCOPE_KEYS: [&str; 28] = [
    "Test Duration (s)",
    "Concurrency",
    "Request Rate (req/s)",
    "Total Requests",
    "Success Requests",
    "Failed Requests",
    "Stream Requests",
    "Non-Stream Requests",
    "Req Throughput (req/s)",
    "Avg Latency (s)",
    "Avg Input Tokens",
    "Not Applicable Metrics",
    "Output Throughput (tok/s)",
    "Total Throughput (tok/s)",
    "Avg TTFT (ms)",
    "Avg TPOT (ms)",
    "Avg ITL (ms)",
    "Avg Steady ITL (ms)",
    "Avg PD Handoff Latency (ms)",
    "Avg PD Handoff Overhead (ms)",
    "Avg Output Tokens",
    "Input Throughput (tok/s)",
    "Avg Turns/Request",
    "KV Cache Hit Rate (%)",
    "Avg First-Turn TTFT (ms)",
    "Avg Subsequent-Turn TTFT (ms)",
    "Avg Decoded Tok/Iter",
    "Spec. Accept Rate",
];
/// Shown in its own section.
const FAILURES_KEY: &str = "Failures By Kind";

/// A table inside a keyboard-focusable scroll region.
pub(super) fn table(
    out: &mut String,
    id: &str,
    caption: &str,
    head: &[&str],
    rows: &[Vec<String>],
) {
    let _ = write!(
        out,
        r#"<div class="table-wrap" role="region" tabindex="0" aria-labelledby="{id}"><table><caption id="{id}">{}</caption><thead><tr>"#,
        esc(caption)
    );
    for (i, h) in head.iter().enumerate() {
        let class = if i == 0 { r#" class="text""# } else { "" };
        let _ = write!(out, r#"<th scope="col"{class}>{}</th>"#, esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, r#"<th scope="row">{}</th>"#, esc(cell));
            } else {
                let _ = write!(out, "<td>{}</td>", esc(cell));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

pub(super) fn basic_info(out: &mut String, h: &HtmlHeader, runs: &[&RunView]) {
    let mut rows = vec![
        vec!["Model".to_string(), h.model.clone()],
        vec!["Endpoint".to_string(), h.endpoint.clone()],
        vec!["Dataset".to_string(), h.dataset.clone()],
        vec!["API".to_string(), h.api.clone()],
    ];
    if let Some(alias) = &h.alias {
        rows.push(vec!["Alias".to_string(), alias.clone()]);
    }
    let total_time: f64 = runs.iter().map(|r| r.report.summary.test_duration_s).sum();
    rows.extend([
        vec!["llmperf version".to_string(), h.version.clone()],
        vec!["Date".to_string(), h.generated_at.clone()],
        vec!["Runs".to_string(), runs.len().to_string()],
        vec![
            "Total test time".to_string(),
            Unit::Duration.fmt_with_unit(total_time),
        ],
        vec!["Output path".to_string(), h.output_path.clone()],
    ]);
    out.push_str(r#"<section id="info"><h2 id="info-caption">Basic information</h2><div class="table-wrap" role="region" tabindex="0" aria-labelledby="info-caption"><table class="kv"><tbody>"#);
    for row in rows {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td>{}</td></tr>"#,
            esc(&row[0]),
            esc(&row[1])
        );
    }
    out.push_str("</tbody></table></div></section>");
}

pub(super) fn overview(out: &mut String, runs: &[&RunView]) {
    let head = [
        "Run",
        "Conc.",
        "Rate",
        "Requests",
        "Success",
        "RPS",
        "Output tok/s",
        "Total tok/s",
        "Avg latency (s)",
        "Avg TTFT (ms)",
        "Avg TPOT (ms)",
        "Avg ITL (ms)",
        "Duration (s)",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let s = &r.report.summary;
            // evalscope's `_safe_div` sentinels (−1, −1000 for the (ms) keys) and open loop's −1 are no values.
            let dash = |v: f64, unit: Unit| {
                if v == -1.0 || v == -1000.0 {
                    "–".to_string()
                } else {
                    unit.fmt(v)
                }
            };
            let success = if s.total_requests > 0 {
                format!(
                    "{} / {} ({}%)",
                    s.success_requests,
                    s.total_requests,
                    Unit::Percent.fmt(s.success_requests as f64 * 100.0 / s.total_requests as f64)
                )
            } else {
                "0 / 0".to_string()
            };
            vec![
                r.name.clone(),
                r.report
                    .concurrency
                    .map_or("-".to_string(), |c| Unit::Count.fmt(c as f64)),
                r.report
                    .rate
                    .map_or("-".to_string(), |v| Unit::ReqPerSec.fmt(v)),
                r.report.number.to_string(),
                success,
                Unit::ReqPerSec.fmt(s.req_throughput),
                Unit::TokPerSec.fmt(s.output_throughput),
                Unit::TokPerSec.fmt(s.total_throughput),
                dash(s.avg_latency_s, Unit::Seconds),
                dash(s.avg_ttft_ms, Unit::Millis),
                dash(s.avg_tpot_ms, Unit::Millis),
                dash(s.avg_itl_ms, Unit::Millis),
                Unit::Duration.fmt(s.test_duration_s),
            ]
        })
        .collect();
    out.push_str(r#"<section id="overview"><h2>Overview</h2>"#);
    table(
        out,
        "overview-caption",
        "One row per run (sorted by concurrency, then rate)",
        &head,
        &rows,
    );
    out.push_str("</section>");
}

pub(super) fn workload(out: &mut String, runs: &[&RunView]) {
    out.push_str(r#"<section id="workload"><h2>Workload throughput</h2>"#);
    let mut rows = Vec::new();
    let mut labels = ("Last 30s".to_string(), "Steady (drop 20%)".to_string());
    for r in runs {
        if let Some(w) = &r.report.workload {
            labels = (w.last_label(), w.steady_label());
            for row in &w.rows {
                rows.push(vec![
                    format!("{} · {}", r.name, row.metric),
                    Unit::TokPerSec.fmt(row.overall),
                    Unit::TokPerSec.fmt(row.last_window),
                    Unit::TokPerSec.fmt(row.steady_state),
                ]);
            }
        }
    }
    if rows.is_empty() {
        out.push_str(r#"<p class="note">No run had a successful request.</p>"#);
    } else {
        table(
            out,
            "workload-caption",
            "Token throughput over the whole run, its last 30 s, and after its first 20 %",
            &["Run · metric (tok/s)", "Overall", &labels.0, &labels.1],
            &rows,
        );
    }
    out.push_str("</section>");
}

/// A JSON value as a table cell; objects are flattened by the caller.
pub(super) fn cell(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), svg::label_num),
        Value::String(s) => s.clone(),
        Value::Null => "—".to_string(),
        other => other.to_string(),
    }
}

pub(super) fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix} / {k}"), v, out);
            }
        }
        other => out.push((prefix.to_string(), cell(other))),
    }
}

/// llmperf's extra summary keys, whatever they are, one row per key and one column per run.
pub(super) fn diagnostics(out: &mut String, runs: &[&RunView]) {
    let mut keys: Vec<String> = Vec::new();
    let per_run: Vec<Vec<(String, String)>> = runs
        .iter()
        .map(|r| {
            let mut cells = Vec::new();
            for (k, v) in &r.summary {
                if !EVALSCOPE_KEYS.contains(&k.as_str()) && k != FAILURES_KEY {
                    flatten(k, v, &mut cells);
                }
            }
            for (k, _) in &cells {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
            cells
        })
        .collect();
    out.push_str(r#"<section id="diagnostics"><h2>Client self-diagnostics</h2>"#);
    if keys.is_empty() {
        out.push_str(r#"<p class="note">No client diagnostics were recorded for these runs.</p>"#);
    } else {
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|k| {
                let mut row = vec![k.clone()];
                row.extend(per_run.iter().map(|cells| {
                    cells
                        .iter()
                        .find(|(ck, _)| ck == k)
                        .map_or("—".to_string(), |(_, v)| v.clone())
                }));
                row
            })
            .collect();
        let mut head = vec!["Key"];
        head.extend(runs.iter().map(|r| r.name.as_str()));
        table(
            out,
            "diagnostics-caption",
            "llmperf's extra summary keys (the client's own health)",
            &head,
            &rows,
        );
    }
    out.push_str("</section>");
}

pub(super) fn failures(out: &mut String, runs: &[&RunView]) {
    let mut kinds: Vec<String> = Vec::new();
    for r in runs {
        for (k, _) in &r.report.summary.extras.failures_by_kind {
            if !kinds.contains(k) {
                kinds.push(k.clone());
            }
        }
    }
    out.push_str(r#"<section id="failures"><h2>Failures by kind</h2>"#);
    if kinds.is_empty() {
        out.push_str(r#"<p class="note">No request failed.</p>"#);
    } else {
        kinds.sort();
        let rows: Vec<Vec<String>> = kinds
            .iter()
            .map(|k| {
                let mut row = vec![k.clone()];
                row.extend(runs.iter().map(|r| {
                    let n = r
                        .report
                        .summary
                        .extras
                        .failures_by_kind
                        .iter()
                        .find(|(rk, _)| rk == k);
                    n.map_or(0, |(_, n)| *n).to_string()
                }));
                row
            })
            .collect();
        let mut head = vec!["Kind"];
        head.extend(runs.iter().map(|r| r.name.as_str()));
        table(
            out,
            "failures-caption",
            "Failed requests per kind and run",
            &head,
            &rows,
        );
        let first: Vec<Vec<String>> = runs
            .iter()
            .flat_map(|r| {
                r.report
                    .summary
                    .extras
                    .first_errors
                    .iter()
                    .map(|e| vec![r.name.clone(), e.kind.clone(), e.line()])
            })
            .collect();
        if !first.is_empty() {
            first_errors_table(out, &first);
        }
    }
    out.push_str("</section>");
}

/// The first error of each kind per run: run, kind, then the error line (left-aligned and wrapped).
fn first_errors_table(out: &mut String, rows: &[Vec<String>]) {
    out.push_str(r#"<div class="table-wrap" role="region" tabindex="0" aria-labelledby="first-errors-caption"><table><caption id="first-errors-caption">The first error of each kind in each run (HTTP status and the start of the error text; the run's database has every one)</caption><thead><tr><th scope="col" class="text">Run</th><th scope="col" class="text">Kind</th><th scope="col" class="text">First error</th></tr></thead><tbody>"#);
    for row in rows {
        let _ = write!(
            out,
            r#"<tr><th scope="row">{}</th><td class="text">{}</td><td class="text wrap">{}</td></tr>"#,
            esc(&row[0]),
            esc(&row[1]),
            esc(&row[2])
        );
    }
    out.push_str("</tbody></table></div>");
}
