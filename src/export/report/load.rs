//! The end-of-sweep text report's `Delivered Load` table (one row per run judged, after the client
//! diagnostics) and one `! Run …: WARNING …` line per run whose load was not as configured
//! (docs/load-verdict.md), and the `Plateau` table (each run's plateau window and its metrics).

use super::extras::{print_notes, run_label};
use super::{conc_rate, report_table, Doc, RunReport};
use crate::metrics::load::{LoadVerdict, Plateau};
use crate::text::format::fmt_num;
use crate::text::table::{Align, Column};

/// The `Delivered Load` table and its warnings; nothing when no run has a verdict.
pub(super) fn print_delivered_load(doc: &mut Doc, runs: &[&RunReport]) {
    let with: Vec<(&&RunReport, &LoadVerdict)> = runs
        .iter()
        .filter_map(|r| r.summary.extras.load.as_ref().map(|l| (r, l)))
        .collect();
    if with.is_empty() {
        return;
    }
    let right = |h: &str| Column::new(h, Align::Right);
    let columns = [
        "Conc.",
        "Rate",
        "Achieved req/s",
        "Rate err %",
        "Delivered conc.",
        "Max in flight",
        "Reached after s",
        "As configured",
    ]
    .map(right);
    let mut table = report_table("Delivered Load", columns.to_vec());
    let opt = |v: Option<f64>, digits| v.map_or("-".to_string(), |v| fmt_num(v, digits));
    for (r, l) in &with {
        let (conc, rate) = conc_rate(r);
        let verdict = match l.as_configured {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        table.push(vec![
            conc,
            rate,
            opt(l.achieved_rate, 2),
            opt(l.rate_error_pct, 2),
            opt(l.delivered_concurrency, 2),
            l.max_in_flight.to_string(),
            opt(l.reached_after_s, 2),
            verdict.to_string(),
        ]);
    }
    doc.print_table(&table);
    let warnings: Vec<String> = with
        .iter()
        .filter_map(|(r, l)| {
            l.warning()
                .map(|w| format!("! Run {}: WARNING: {w}", run_label(r)))
        })
        .collect();
    print_notes(doc, &warnings);
}

/// The `Plateau` table: one row per run with a plateau window (its start, end, coverage and metrics over
/// it); nothing when no run has one.
pub(super) fn print_plateau(doc: &mut Doc, runs: &[&RunReport]) {
    let with: Vec<(&&RunReport, &Plateau)> = runs
        .iter()
        .filter_map(|r| r.summary.extras.plateau.as_ref().map(|p| (r, p)))
        .filter(|(_, p)| p.start_s.is_some())
        .collect();
    if with.is_empty() {
        return;
    }
    let columns = [
        "Conc.",
        "Rate",
        "Start s",
        "End s",
        "Coverage %",
        "Req/s",
        "Output tok/s",
        "TTFT p99 s",
        "Latency p99 s",
    ]
    .map(|h| Column::new(h, Align::Right));
    let mut table = report_table("Plateau", columns.to_vec());
    let opt = |v: Option<f64>, digits| v.map_or("-".to_string(), |v| fmt_num(v, digits));
    for (r, p) in &with {
        let (conc, rate) = conc_rate(r);
        table.push(vec![
            conc,
            rate,
            opt(p.start_s, 2),
            opt(p.end_s, 2),
            opt(p.coverage_pct, 1),
            opt(p.request_throughput, 2),
            opt(p.output_throughput, 2),
            opt(p.ttft.p99_s, 4),
            opt(p.latency.p99_s, 3),
        ]);
    }
    doc.print_table(&table);
}
