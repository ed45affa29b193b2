//! Markdown for a pull-request comment: the result first, one table per point, the gates, the warnings.

use super::super::gate::Outcome;
use super::super::Report;
use super::{gate_change, interval, method, percent, summary_line, threshold, value, verdict};

/// Escapes the characters that break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The Markdown of `report`.
pub fn render(report: &Report) -> String {
    let failed = !report.failures().is_empty();
    let mark = if failed { "❌" } else { "✅" };
    let mut out = format!(
        "### {mark} llmperf compare: {}\n\n**BASE** `{}` → **NEW** `{}`\n",
        summary_line(report),
        report.base.display(),
        report.new.display()
    );
    if !report.gates.is_empty() {
        out.push_str("\n| Gate | Point | Outcome | Change |\n|---|---|---|---|\n");
        for p in &report.points {
            for g in &p.gates {
                let gate = &report.gates[g.gate];
                let outcome = match (g.outcome, g.fails) {
                    (Outcome::Fail, _) => "**FAIL**".to_string(),
                    (o, true) => format!("**{o}** (fails under --strict)"),
                    (o, false) => o.to_string(),
                };
                out.push_str(&format!(
                    "| `{}` | {} | {outcome} | {} vs {} |\n",
                    cell(&gate.spec),
                    p.key,
                    cell(&gate_change(gate, &g.result)),
                    cell(&threshold(gate))
                ));
            }
        }
    }
    for p in &report.points {
        out.push_str(&format!(
            "\n#### {} ({})\n\n| Metric | BASE | NEW | Δ | 95% interval | Verdict |\n|---|---:|---:|---:|---|---|\n",
            p.key,
            method(p)
        ));
        for m in &p.metrics {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                m.metric,
                value(m.metric, m.base),
                value(m.metric, m.new),
                percent(m.changes.relative.point),
                cell(&interval(&m.changes.relative)),
                cell(&verdict(m))
            ));
        }
    }
    let unmatched: Vec<String> = report
        .only_base
        .iter()
        .map(|k| format!("only in BASE: {k}"))
        .chain(report.only_new.iter().map(|k| format!("only in NEW: {k}")))
        .collect();
    if !unmatched.is_empty() || !report.warnings.is_empty() {
        out.push_str("\n**Notes**\n\n");
        for line in unmatched.iter().chain(&report.warnings) {
            out.push_str(&format!("- {}\n", cell(line)));
        }
    }
    out
}
