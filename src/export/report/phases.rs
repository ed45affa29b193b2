//! The end-of-sweep text report's `Connection Phases` table (docs/phases.md): one row per run whose
//! requests stored phases, each phase's mean / p99 in ms and the count of new connections.

use super::{conc_rate, report_table, Doc, RunReport};
use crate::metrics::phases::PhaseSummary;
use crate::record::phases::PHASE_NAMES;
use crate::text::format::fmt_num;
use crate::text::table::{Align, Column};

/// A phase's cell: `mean / p99` in ms, `-` where no request of the run had it.
pub(crate) fn phase_cell(p: &PhaseSummary, label: &str) -> String {
    p.stat(label).map_or("-".to_string(), |s| {
        format!("{} / {}", fmt_num(s.mean_ms, 3), fmt_num(s.p99_ms, 3))
    })
}

/// The `Connection Phases` table; nothing when no run has phases.
pub(super) fn print_phases(doc: &mut Doc, runs: &[&RunReport]) {
    let with: Vec<(&&RunReport, &PhaseSummary)> = runs
        .iter()
        .filter_map(|r| r.summary.extras.phases.as_ref().map(|p| (r, p)))
        .collect();
    if with.is_empty() {
        return;
    }
    let mut columns = vec!["Conc.", "Rate", "New conns"];
    columns.extend(PHASE_NAMES.iter().map(|(_, label)| *label));
    let columns = columns
        .into_iter()
        .map(|h| Column::new(h, Align::Right))
        .collect();
    let mut table = report_table("Connection Phases (ms, mean / p99)", columns);
    for (r, p) in &with {
        let (conc, rate) = conc_rate(r);
        let mut row = vec![conc, rate, p.new_connections.to_string()];
        row.extend(PHASE_NAMES.iter().map(|(_, label)| phase_cell(p, label)));
        table.push(row);
    }
    doc.print_table(&table);
}
