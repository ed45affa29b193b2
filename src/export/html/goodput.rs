//! The `SLO attainment` section of `perf_report.html` (runs with `--goodput`): the share of requests
//! meeting every SLO, and each SLO alone, against the sweep variable, plus goodput per run.

use std::fmt::Write;

use super::esc;
use super::svg::{self, Series};
use super::view::RunView;

/// The attainment keys of the runs' summaries, joint first (empty without `--goodput`).
fn attainment_keys(runs: &[&RunView]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in runs {
        for k in r.summary.keys() {
            if k.ends_with("SLO Attainment (%)") && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort_by_key(|k| k != "SLO Attainment (%)");
    keys
}

/// Appends the section when any run has SLO attainment keys.
pub(super) fn section(out: &mut String, runs: &[&RunView], x_label: &str, xs: &[String]) {
    let keys = attainment_keys(runs);
    if keys.is_empty() {
        return;
    }
    let names: Vec<String> = keys
        .iter()
        .map(|k| match k.strip_suffix(" SLO Attainment (%)") {
            Some(metric) => metric.to_string(),
            None => "all SLOs".to_string(),
        })
        .collect();
    let series: Vec<Series> = keys
        .iter()
        .zip(&names)
        .map(|(k, name)| Series {
            name,
            values: runs
                .iter()
                .map(|r| r.summary.get(k).and_then(|v| v.as_f64()))
                .collect(),
        })
        .collect();
    out.push_str(r#"<section id="slo"><h2>SLO attainment</h2><div class="grid">"#);
    let chart = svg::sweep_chart(
        "slo-attainment",
        "SLO attainment",
        x_label,
        "%",
        xs,
        &series,
    );
    let _ = write!(
        out,
        "<figure>{chart}<figcaption>{}</figcaption></figure>",
        esc(&format!(
            "Share of measured requests (failures count as misses) meeting every --goodput SLO, and each SLO alone, against {x_label}."
        ))
    );
    let goodput = Series {
        name: "goodput",
        values: runs
            .iter()
            .map(|r| r.summary.get("Goodput (req/s)").and_then(|v| v.as_f64()))
            .collect(),
    };
    let chart = svg::sweep_chart("slo-goodput", "Goodput", x_label, "req/s", xs, &[goodput]);
    let _ = write!(
        out,
        "<figure>{chart}<figcaption>{}</figcaption></figure>",
        esc(&format!(
            "Requests per second that met every SLO, against {x_label}."
        ))
    );
    out.push_str("</div></section>");
}
