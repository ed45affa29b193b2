//! The server's side of a run in `perf_report.html` (with `--server-metrics`): a client-vs-server table
//! (client TTFT next to the server's TTFT and queue time) and the server's gauges over time, drawn on the
//! request timeline's axis (seconds since the run's first request, same ticks) so load and server state
//! line up.

use std::fmt::Write;

use serde_json::{Map, Value};

use super::sections::table;
use super::svg::{label_num, n, nice_ticks, plot_w, tick_labels, Frame, LEFT};
use super::view::RunView;

/// The summary keys of the client-vs-server table: (row label, client key, server key).
const ROWS: &[(&str, &str, &str)] = &[
    ("Avg TTFT (ms)", "Avg TTFT (ms)", "Server Avg TTFT (ms)"),
    ("P50 TTFT (ms)", "", "Server P50 TTFT (ms)"),
    ("P99 TTFT (ms)", "", "Server P99 TTFT (ms)"),
    ("Avg queue time (ms)", "", "Server Avg Queue Time (ms)"),
    ("Avg ITL (ms)", "Avg ITL (ms)", "Server Avg ITL (ms)"),
    ("TTFT client overhead (ms)", "TTFT Client Overhead (ms)", ""),
];

fn cell(summary: &Map<String, Value>, key: &str) -> String {
    summary
        .get(key)
        .and_then(Value::as_f64)
        .map_or_else(|| "—".to_string(), label_num)
}

/// The run's server section (nothing when the run has no server metrics).
pub fn section(out: &mut String, i: usize, r: &RunView) {
    let Some(view) = &r.server else { return };
    let rows: Vec<Vec<String>> = ROWS
        .iter()
        .filter(|(_, c, s)| r.summary.contains_key(*c) || r.summary.contains_key(*s))
        .map(|(label, c, s)| {
            let server = match r.summary.get(&s.replace(" (ms)", " Bucket Error (ms)")) {
                Some(e) => format!("{} ± {}", cell(&r.summary, s), cell_value(e)),
                None => cell(&r.summary, s),
            };
            vec![label.to_string(), cell(&r.summary, c), server]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("<div>");
        table(
            out,
            &format!("client-server-{i}"),
            "Client vs server (server quantiles ± their histogram bucket width)",
            &["", "client", "server"],
            &rows,
        );
        out.push_str("</div>");
    }
    let Some(timeline) = view.json.get("timeline").and_then(Value::as_object) else {
        return;
    };
    let t0 = view.t0_s.unwrap_or(0.0);
    let x_max = r.data.spans.iter().map(|s| s.end).fold(0.0f64, f64::max);
    for (j, (name, points)) in timeline.iter().enumerate() {
        let pts: Vec<(f64, f64)> = points
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p.get(0)?.as_f64()? - t0, p.get(1)?.as_f64()?)))
            .collect();
        let svg = gauge_chart(&format!("server-{i}-{j}"), name, &pts, x_max);
        let _ = write!(
            out,
            r#"<figure>{svg}<figcaption>Server {} at each scrape, on the request timeline's axis.</figcaption></figure>"#,
            super::esc(name)
        );
    }
}

fn cell_value(v: &Value) -> String {
    v.as_f64().map_or_else(|| "∞".to_string(), label_num)
}

/// A step line of one gauge over `[0, x_max]` (the timeline's range; scrapes outside it are dropped).
fn gauge_chart(id: &str, name: &str, points: &[(f64, f64)], x_max: f64) -> String {
    let x_label = "seconds since the run's first request";
    let x_max = if x_max > 0.0 {
        x_max
    } else {
        points.iter().map(|p| p.0).fold(1e-6, f64::max)
    };
    let ticks = nice_ticks(0.0, x_max);
    let x_hi = *ticks.last().expect("ticks");
    let shown: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(t, v)| *t >= 0.0 && *t <= x_hi && v.is_finite())
        .collect();
    if shown.is_empty() {
        return super::svg::empty_chart(id, name, x_label, name);
    }
    let y_max = shown.iter().map(|p| p.1).fold(0.0f64, f64::max);
    let desc = format!("{name}: {} scrapes, peak {}", shown.len(), label_num(y_max));
    let mut f = Frame::new(id, name, &desc, x_label, name, y_max);
    let x = |t: f64| LEFT + plot_w() * (t / x_hi).clamp(0.0, 1.0);
    for (t, label) in ticks.iter().zip(tick_labels(&ticks)) {
        f.x_tick(x(*t), &label);
    }
    let mut line = String::new();
    for (k, (t, v)) in shown.iter().enumerate() {
        let _ = write!(
            line,
            "{}{} {}",
            if k == 0 { "M" } else { "L" },
            n(x(*t)),
            n(f.y(*v))
        );
    }
    let marks = format!(
        r#"<path class="line s1" d="{line}"><title>{}</title></path>"#,
        super::esc(&desc)
    );
    f.close(&marks)
}
