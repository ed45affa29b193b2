//! The `Per-Trace Metrics` table of the end-of-sweep text report (`--multi-turn` runs): per run with a
//! trace summary, one row per trace metric with its mean, p50, p90, p99 and max, formatted as evalscope
//! formats the metric.

use super::{conc_rate, report_table, RunReport};
use crate::text::format::unit_for_key;
use crate::text::table::{Align, Column, RichTable};

/// The table, `None` when no run has a trace.
pub(super) fn per_trace_table(runs: &[&RunReport]) -> Option<RichTable> {
    let traced: Vec<&&RunReport> = runs.iter().filter(|r| !r.trace.is_empty()).collect();
    if traced.is_empty() {
        return None;
    }
    let mut columns = vec![
        Column::new("Conc.", Align::Right),
        Column::new("Rate", Align::Right),
        Column::new("Metric", Align::Left),
    ];
    for stat in ["mean", "p50", "p90", "p99", "max"] {
        columns.push(Column::new(stat, Align::Right));
    }
    let mut table = report_table("Per-Trace Metrics", columns);
    for (i, r) in traced.iter().enumerate() {
        if i > 0 {
            table.section();
        }
        let mut first = Some(conc_rate(r));
        for row in &r.trace.rows {
            let (c, rate) = first.take().unwrap_or_default();
            let unit = unit_for_key(row.metric);
            let mut cells = vec![c, rate, row.metric.to_string()];
            // mean, p50, p90, p99, max of the stats (mean, min, p50, p90, p95, p99, max).
            cells.extend([0, 2, 3, 5, 6].map(|k| unit.fmt(row.stats[k])));
            table.push(cells);
        }
    }
    Some(table)
}
