//! Charts over time for `perf_report.html`: the request timeline and the output token rate (same frame,
//! classes and conventions as [`super::svg`]).

use std::fmt::Write;

use super::esc;
use super::svg::{
    empty_chart, label_num, n, nice_ticks, plot_h, plot_w, tick_labels, Frame, LEFT, TOP, W,
};

/// One request on the timeline, seconds since the run's first start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Sent.
    pub start: f64,
    /// First output token (successes; equal to `end` for non-stream replies).
    pub first: f64,
    /// Finished or failed.
    pub end: f64,
    /// Succeeded.
    pub ok: bool,
}

/// The plateau window (docs/load-verdict.md) as a shaded band over the plot, `x` mapping seconds to the
/// chart's x; nothing without a window.
fn plateau_band(band: Option<(f64, f64)>, x: impl Fn(f64) -> f64) -> String {
    let Some((a, b)) = band.filter(|(a, b)| b > a) else {
        return String::new();
    };
    format!(
        r#"<rect class="plateau" x="{}" y="{}" width="{}" height="{}"><title>plateau: {} s to {} s</title></rect>"#,
        n(x(a)),
        n(TOP),
        n((x(b) - x(a)).max(0.5)),
        n(plot_h()),
        label_num(a),
        label_num(b)
    )
}

/// The request timeline: one row per (sampled) request, ordered by start; waiting for the first token,
/// then generating, or failed. `band`: the plateau window (seconds since the first request), shaded.
pub fn timeline_chart(
    id: &str,
    title: &str,
    spans: &[Span],
    note: &str,
    band: Option<(f64, f64)>,
) -> String {
    let x_label = "seconds since the run's first request";
    if spans.is_empty() {
        return empty_chart(id, title, x_label, "requests");
    }
    let x_max = spans.iter().map(|s| s.end).fold(0.0f64, f64::max).max(1e-6);
    let ticks = nice_ticks(0.0, x_max);
    let x_hi = *ticks.last().expect("ticks");
    let x = |t: f64| LEFT + plot_w() * (t / x_hi).clamp(0.0, 1.0);
    let desc = format!(
        "{} requests: time to first token, then generation; {note}",
        spans.len()
    );
    let mut out = Frame::open(id, title, &desc, x_label, "requests (by start)", false);
    out.push_str(r#"<g class="grid">"#);
    for (t, label) in ticks.iter().zip(tick_labels(&ticks)) {
        let _ = write!(
            out,
            r#"<line x1="{x}" x2="{x}" y1="{}" y2="{}"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
            n(TOP),
            n(TOP + plot_h()),
            n(TOP + plot_h() + 16.0),
            label,
            x = n(x(*t))
        );
    }
    out.push_str("</g>");
    out.push_str(&plateau_band(band, x));
    let row_h = plot_h() / spans.len() as f64;
    let stroke = row_h.clamp(0.6, 6.0);
    let (mut wait, mut gen, mut fail) = (String::new(), String::new(), String::new());
    for (i, s) in spans.iter().enumerate() {
        let y = n(TOP + row_h * (i as f64 + 0.5));
        let (a, b, c) = (n(x(s.start)), n(x(s.first)), n(x(s.end)));
        if s.ok {
            let _ = write!(wait, "M{a} {y}H{b}");
            // Keep a visible dash even when generation took no time (non-stream replies).
            let end = if c == b { n(x(s.end) + 0.6) } else { c };
            let _ = write!(gen, "M{b} {y}H{end}");
        } else {
            let end = if c == a { n(x(s.end) + 0.6) } else { c };
            let _ = write!(fail, "M{a} {y}H{end}");
        }
    }
    let sw = n(stroke);
    let mut marks = String::new();
    for (class, d, tip) in [
        ("span fail", fail, "failed"),
        ("span wait", wait, "waiting for the first token"),
        ("span gen", gen, "generating"),
    ] {
        if !d.is_empty() {
            let _ = write!(
                marks,
                r#"<path class="{class}" stroke-width="{sw}" d="{d}"><title>{tip}</title></path>"#
            );
        }
    }
    let _ = write!(
        marks,
        r#"<rect class="key wait" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">to first token</text><rect class="key gen" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">generating</text><rect class="key fail" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">failed</text>"#,
        n(W - 300.0),
        n(W - 287.0),
        n(W - 186.0),
        n(W - 173.0),
        n(W - 90.0),
        n(W - 77.0)
    );
    let _ = write!(out, r#"<g class="marks">{marks}</g></svg>"#);
    out
}

/// A line over time: `(seconds since the run's start, value)` points, evenly spaced; `band`: the plateau
/// window, shaded.
pub fn time_chart(
    id: &str,
    title: &str,
    y_label: &str,
    points: &[(f64, f64)],
    band: Option<(f64, f64)>,
) -> String {
    let x_label = "seconds since the run's first request";
    if points.is_empty() {
        return empty_chart(id, title, x_label, y_label);
    }
    let y_max = points.iter().map(|p| p.1).fold(0.0f64, f64::max);
    let x_max = points.iter().map(|p| p.0).fold(0.0f64, f64::max).max(1e-6);
    let x_ticks = nice_ticks(0.0, x_max);
    let x_hi = *x_ticks.last().expect("ticks");
    let desc = format!(
        "{y_label} over {} s, peak {}",
        label_num(x_max),
        label_num(y_max)
    );
    let mut f = Frame::new(id, title, &desc, x_label, y_label, y_max);
    let x = |t: f64| LEFT + plot_w() * (t / x_hi).clamp(0.0, 1.0);
    for (t, label) in x_ticks.iter().zip(tick_labels(&x_ticks)) {
        f.x_tick(x(*t), &label);
    }
    let base = n(TOP + plot_h());
    let mut line = String::new();
    for (i, (t, v)) in points.iter().enumerate() {
        let _ = write!(
            line,
            "{}{} {}",
            if i == 0 { "M" } else { "L" },
            n(x(*t)),
            n(f.y(*v))
        );
    }
    let area = format!(
        "{line}L{} {base}L{} {base}Z",
        n(x(points[points.len() - 1].0)),
        n(x(points[0].0))
    );
    let marks = format!(
        r#"{}<path class="area s0" d="{area}"/><path class="line s0" d="{line}"><title>{}</title></path>"#,
        plateau_band(band, x),
        esc(&desc)
    );
    f.close(&marks)
}
