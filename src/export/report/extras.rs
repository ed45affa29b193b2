//! llmperf's additions to the end-of-sweep text report, after every evalscope part (so evalscope's text
//! stays a byte-identical prefix): the `Failures` table and the first error of each kind per run, the
//! interrupted-run lines, the `Client
//! Diagnostics` table and the client-limited warnings.

use super::{conc_rate, report_table, Doc, RunReport};
use crate::metrics::ClientDiagnostics;
use crate::text::format::{fmt_num, Unit};
use crate::text::table::{Align, Column};

/// `! Run …` lines after a blank line; nothing when there are none.
pub(super) fn print_notes(doc: &mut Doc, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    doc.print("");
    for line in lines {
        doc.print(line);
    }
}

/// llmperf's additions, after every evalscope part: failures by kind, interrupted runs.
pub(super) fn print_llmperf_extras(doc: &mut Doc, runs: &[&RunReport]) {
    let failing: Vec<&&RunReport> = runs
        .iter()
        .filter(|r| !r.summary.extras.failures_by_kind.is_empty())
        .collect();
    if !failing.is_empty() {
        let columns = vec![
            Column::new("Conc.", Align::Right),
            Column::new("Rate", Align::Right),
            Column::new("Kind", Align::Left),
            Column::new("Count", Align::Right),
        ];
        let mut table = report_table("Failures", columns);
        for (i, r) in failing.iter().enumerate() {
            if i > 0 {
                table.section();
            }
            let mut first = Some(conc_rate(r));
            for (kind, count) in &r.summary.extras.failures_by_kind {
                let (c, rate) = first.take().unwrap_or_default();
                table.push(vec![c, rate, kind.clone(), count.to_string()]);
            }
        }
        doc.print_table(&table);
        let first: Vec<String> = failing
            .iter()
            .flat_map(|r| {
                let run = run_label(r);
                r.summary
                    .extras
                    .first_errors
                    .iter()
                    .map(move |e| format!("! Run {run}: first {} error: {}", e.kind, e.line()))
            })
            .collect();
        print_notes(doc, &first);
    }
    let interrupted: Vec<String> = runs
        .iter()
        .filter(|r| r.summary.extras.interrupted)
        .map(|r| {
            format!(
                "! Run {} was interrupted: results cover the requests completed before the signal.",
                run_label(r)
            )
        })
        .collect();
    print_notes(doc, &interrupted);
    print_client_diagnostics(doc, runs);
}

/// The client's self-diagnostics per run (a `Client` table), then one `! Run …: WARNING …` line per run
/// the client itself limited.
fn print_client_diagnostics(doc: &mut Doc, runs: &[&RunReport]) {
    let with: Vec<(&&RunReport, &ClientDiagnostics)> = runs
        .iter()
        .filter_map(|r| r.summary.extras.client.as_ref().map(|c| (r, c)))
        .collect();
    if with.is_empty() {
        return;
    }
    let right = |h: &str| Column::new(h, Align::Right);
    let columns = [
        "Conc.",
        "Rate",
        "CPU%1core",
        "CPU%all",
        "Sched ms",
        "Lag p50 ms",
        "Lag p99 ms",
        "Read lag p99 ms",
        "Limited",
    ]
    .map(right);
    let mut table = report_table("Client Diagnostics", columns.to_vec());
    for (r, c) in &with {
        let (conc, rate) = conc_rate(r);
        table.push(vec![
            conc,
            rate,
            fmt_num(c.cpu_pct_one_core, 1),
            fmt_num(c.cpu_pct_all_cores, 1),
            fmt_num(c.sched_delay_ms, 3),
            fmt_num(c.send_lag_p50_ms, 3),
            fmt_num(c.send_lag_p99_ms, 3),
            fmt_num(c.read_lag_p99_ms, 3),
            if c.limits.is_empty() { "no" } else { "YES" }.to_string(),
        ]);
    }
    doc.print_table(&table);
    let warnings: Vec<String> = with
        .iter()
        .filter_map(|(r, c)| c.warning().map(|w| format!("! Run {}: {w}", run_label(r))))
        .collect();
    print_notes(doc, &warnings);
}

/// `conc 4`, `rate 5`, or `conc 4, rate 5` for a run.
pub(super) fn run_label(r: &RunReport) -> String {
    let mut parts = Vec::new();
    if let Some(c) = r.concurrency {
        parts.push(format!("conc {c}"));
    }
    if let Some(rate) = r.rate {
        parts.push(format!("rate {}", Unit::ReqPerSec.fmt(rate)));
    }
    if parts.is_empty() {
        "conc -".to_string()
    } else {
        parts.join(", ")
    }
}
