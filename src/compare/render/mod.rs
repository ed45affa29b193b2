//! The comparison written out: a console table ([`console`]), Markdown for a pull-request comment
//! ([`markdown`]), JSON ([`json`]) and JUnit XML, one test case per gate and point ([`junit`]); the
//! number formats they share.

pub mod console;
pub mod json;
pub mod junit;
pub mod markdown;

use super::gate::{Direction, Gate, Threshold};
use super::metric::Metric;
use super::verdict::{Method, MetricResult};
use super::{PointReport, Report};
use crate::stats::Change;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table per point, for a terminal.
    Console,
    /// GitHub-flavoured Markdown, for a pull-request comment.
    Markdown,
    /// JSON, for programs.
    Json,
}

/// `report` in `format`.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Console => console::render(report),
        Format::Markdown => markdown::render(report),
        Format::Json => json::render(report),
    }
}

/// A value in its metric's unit: ms and throughputs with 2 decimals, seconds with 4.
fn value(metric: Metric, v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => {
            let unit = metric.quantity.unit();
            let decimals = if unit == "s" { 4 } else { 2 };
            format!("{v:.decimals$} {unit}")
        }
        _ => "—".into(),
    }
}

/// A relative change: `+12.3%`, `−4.0%`, `+∞`.
fn percent(x: f64) -> String {
    if x == f64::INFINITY {
        "+∞".into()
    } else if x == f64::NEG_INFINITY {
        "-∞".into()
    } else if x.is_nan() {
        "—".into()
    } else {
        format!("{:+.1}%", x * 100.0)
    }
}

/// A relative interval: `[+5.1%, +19.8%]`, or `—`.
fn interval(c: &Change) -> String {
    match c.interval {
        Some(i) => format!("[{}, {}]", percent(i.low), percent(i.high)),
        None => "—".into(),
    }
}

/// A verdict with its note: `inconclusive (one run each: …)`.
fn verdict(r: &MetricResult) -> String {
    match &r.note {
        Some(n) => format!("{} ({n})", r.verdict),
        None => r.verdict.to_string(),
    }
}

/// How a point's intervals were made: `1 run each, intervals from the rows` / `3 vs 3 repeats`.
fn method(p: &PointReport) -> String {
    let repeats = p
        .metrics
        .iter()
        .any(|m| matches!(m.method, Method::Repeats { .. }));
    if repeats {
        format!(
            "{} vs {} runs, intervals from the repeats",
            p.base_runs, p.new_runs
        )
    } else {
        "1 run each, intervals from the rows".into()
    }
}

/// A gate's threshold as a sentence end: `beyond +10%`, `beyond −5.0 ms`.
fn threshold(g: &Gate) -> String {
    let sign = match g.direction {
        Direction::Up => "+",
        Direction::Down => "-",
    };
    match g.threshold {
        Threshold::Relative(t) => format!("{sign}{}%", crate::pyjson::float_repr(t * 100.0)),
        Threshold::Absolute(t) => format!(
            "{sign}{} {}",
            crate::pyjson::float_repr(t),
            g.metric.quantity.unit()
        ),
    }
}

/// The change a gate reads, as text: relative or absolute with its interval.
fn gate_change(g: &Gate, r: &MetricResult) -> String {
    match g.threshold {
        Threshold::Relative(_) => format!(
            "{} {}",
            percent(r.changes.relative.point),
            interval(&r.changes.relative)
        ),
        Threshold::Absolute(_) => {
            let unit = r.metric.quantity.unit();
            let f = |x: f64| {
                if x.is_finite() {
                    format!("{x:+.3}")
                } else {
                    percent(x)
                }
            };
            let c = &r.changes.absolute;
            match c.interval {
                Some(i) => format!("{} {unit} [{}, {}]", f(c.point), f(i.low), f(i.high)),
                None => format!("{} {unit}", f(c.point)),
            }
        }
    }
}

/// The one-line result: `no gated regression` / `2 gated regressions`.
fn summary_line(report: &Report) -> String {
    let n = report.failures().len();
    match (report.gates.is_empty(), n) {
        (true, _) => "no gates (--fail-on): nothing to fail".into(),
        (false, 0) => "no gated regression".into(),
        (false, 1) => "1 gated regression".into(),
        (false, n) => format!("{n} gated regressions"),
    }
}
