//! The console table: per matched point, every metric's BASE and NEW values, change, 95 % interval and
//! verdict; then the gates, the unmatched points, the warnings and the one-line result.

use super::super::Report;
use super::{gate_change, interval, method, percent, summary_line, threshold, value, verdict};
use crate::text::table::{Align, SimpleOutline};

/// The console text of `report`.
pub fn render(report: &Report) -> String {
    let mut out = format!(
        "llmperf compare\n  BASE: {}\n  NEW:  {}\n",
        report.base.display(),
        report.new.display()
    );
    for p in &report.points {
        out.push_str(&format!("\n{} ({})\n", p.key, method(p)));
        let mut t = SimpleOutline::new(
            ["Metric", "BASE", "NEW", "Δ", "95% interval", "Verdict"]
                .map(String::from)
                .to_vec(),
            vec![
                Align::Left,
                Align::Right,
                Align::Right,
                Align::Right,
                Align::Left,
                Align::Left,
            ],
        );
        for m in &p.metrics {
            t.push(vec![
                m.metric.to_string(),
                value(m.metric, m.base),
                value(m.metric, m.new),
                percent(m.changes.relative.point),
                interval(&m.changes.relative),
                verdict(m),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    if !report.gates.is_empty() {
        out.push_str("\nGates (--fail-on):\n");
        for p in &report.points {
            for g in &p.gates {
                let gate = &report.gates[g.gate];
                let strict = if g.fails && g.outcome != super::super::gate::Outcome::Fail {
                    " (fails under --strict)"
                } else {
                    ""
                };
                out.push_str(&format!(
                    "  {:<20} {}: {}{strict}: {} vs {}\n",
                    gate.spec,
                    p.key,
                    g.outcome,
                    gate_change(gate, &g.result),
                    threshold(gate)
                ));
            }
        }
    }
    for (label, keys) in [
        ("Only in BASE (not compared)", &report.only_base),
        ("Only in NEW (not compared)", &report.only_new),
    ] {
        if !keys.is_empty() {
            let list: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            out.push_str(&format!("\n{label}: {}\n", list.join("; ")));
        }
    }
    if !report.warnings.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in &report.warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out.push_str(&format!("\nResult: {}\n", summary_line(report)));
    out
}
