//! The report page's `Connection phases` section (docs/phases.md): one row per run, each phase's mean /
//! p99 in ms and the count of new connections; a note when no run stored phases.

use super::sections::table;
use super::view::RunView;
use crate::export::report::phase_cell;
use crate::record::phases::PHASE_NAMES;

/// The `Connection phases` section.
pub(super) fn phases(out: &mut String, runs: &[&RunView]) {
    out.push_str(r#"<section id="phases"><h2>Connection phases</h2>"#);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| {
            let p = r.report.summary.extras.phases.as_ref()?;
            let mut row = vec![r.name.clone(), p.new_connections.to_string()];
            row.extend(PHASE_NAMES.iter().map(|(_, label)| phase_cell(p, label)));
            Some(row)
        })
        .collect();
    if rows.is_empty() {
        out.push_str(r#"<p class="note">No run stored connection phases.</p>"#);
    } else {
        let mut head = vec!["Run", "New conns"];
        head.extend(PHASE_NAMES.iter().map(|(_, label)| *label));
        table(
            out,
            "phases-caption",
            "Connection phases per request, ms (mean / p99); laid end to end from the send, they end before the first chunk",
            &head,
            &rows,
        );
    }
    out.push_str("</section>");
}
