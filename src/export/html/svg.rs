//! Inline SVG charts for `perf_report.html`, drawn in Rust: no script, no network, no chart library.
//!
//! Every chart is an `<svg class="chart" data-chart="<id>" role="img">` with a `<title>` and a `<desc>`
//! (screen readers), its marks inside one `<g class="marks">`, and colours taken from CSS classes
//! (`s0`…`s4`, `ok`, `fail`, …) so the page's light and dark themes and print style apply. A chart without
//! data says so (`data-empty="true"` and a "No data" text) instead of disappearing.

use std::fmt::Write;

use super::esc;

/// The drawing box of every chart (user units; the SVG scales to its container).
pub(super) const W: f64 = 640.0;
const H: f64 = 300.0;
pub(super) const LEFT: f64 = 64.0;
pub(super) const RIGHT: f64 = 16.0;
pub(super) const TOP: f64 = 36.0;
const BOTTOM: f64 = 46.0;

pub(super) fn plot_w() -> f64 {
    W - LEFT - RIGHT
}

pub(super) fn plot_h() -> f64 {
    H - TOP - BOTTOM
}

/// A compact coordinate: one decimal, no trailing `.0`.
pub(super) fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A number for axis labels and tooltips: up to 3 significant decimals, no trailing zeros.
pub fn label_num(v: f64) -> String {
    if !v.is_finite() {
        return "—".to_string();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An axis label: like [`label_num`], with `k` / `M` for large values so labels stay narrow.
pub fn axis_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", label_num(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", label_num(v / 1e3))
    } else {
        label_num(v)
    }
}

/// Labels for evenly spaced `ticks` (from [`nice_ticks`]): as many decimals as their step needs, so no two
/// labels read alike (`0, 0.0005, 0.001` on a run of a millisecond, not `0, 0.001, 0.001`); `k` / `M`
/// from 10,000 on, as [`axis_num`].
pub fn tick_labels(ticks: &[f64]) -> Vec<String> {
    let step = match ticks {
        [a, b, ..] => (b - a).abs(),
        _ => 1.0,
    };
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10() - 1e-9).ceil().max(0.0) as usize
    } else {
        0
    };
    ticks
        .iter()
        .map(|&t| {
            if t.abs() >= 1e4 {
                return axis_num(t);
            }
            let s = format!("{t:.decimals$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        })
        .collect()
}

/// "Nice" ticks from 0 (or `lo`) to at least `hi`: about five steps of 1, 2 or 5 × 10ᵏ.
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut ticks = vec![start];
    while ticks[ticks.len() - 1] < hi - step * 1e-9 && ticks.len() < 12 {
        let t = start + step * ticks.len() as f64;
        ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
    }
    if ticks.len() < 2 {
        ticks.push(start + step);
    }
    ticks
}

/// The frame shared by every chart: the opening tag, title, description, axes, ticks and axis labels.
pub(super) struct Frame {
    pub(super) out: String,
    y_lo: f64,
    y_hi: f64,
}

impl Frame {
    pub(super) fn open(
        id: &str,
        title: &str,
        desc: &str,
        x_label: &str,
        y_label: &str,
        empty: bool,
    ) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="chart" data-chart="{id}" viewBox="0 0 {W} {H}" role="img" aria-labelledby="{id}-t {id}-d"{}>"#,
            if empty { r#" data-empty="true""# } else { "" }
        );
        let _ = write!(
            out,
            r#"<title id="{id}-t">{}</title><desc id="{id}-d">{}</desc>"#,
            esc(title),
            esc(desc)
        );
        let _ = write!(
            out,
            r#"<text class="ctitle" x="{}" y="16">{}</text>"#,
            n(LEFT),
            esc(title)
        );
        let _ = write!(
            out,
            r#"<text class="axlabel" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            n(LEFT + plot_w() / 2.0),
            n(H - 6.0),
            esc(x_label)
        );
        let _ = write!(
            out,
            r#"<text class="axlabel" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            n(TOP + plot_h() / 2.0),
            esc(y_label)
        );
        out
    }

    /// A frame with a linear y axis over `[0 or lo, hi]`.
    pub(super) fn new(
        id: &str,
        title: &str,
        desc: &str,
        x_label: &str,
        y_label: &str,
        y_max: f64,
    ) -> Frame {
        let mut out = Self::open(id, title, desc, x_label, y_label, false);
        // 5 % headroom keeps the highest mark clear of the legend.
        let ticks = nice_ticks(0.0, if y_max > 0.0 { y_max * 1.05 } else { 1.0 });
        let y_hi = *ticks.last().expect("ticks");
        out.push_str(r#"<g class="grid">"#);
        for (t, label) in ticks.iter().zip(tick_labels(&ticks)) {
            let y = TOP + plot_h() * (1.0 - t / y_hi);
            let _ = write!(
                out,
                r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}"/><text x="{}" y="{}" text-anchor="end">{}</text>"#,
                n(LEFT),
                n(W - RIGHT),
                n(LEFT - 6.0),
                n(y + 4.0),
                label,
                y = n(y)
            );
        }
        out.push_str("</g>");
        let _ = write!(
            out,
            r#"<path class="axis" d="M{l} {t}V{b}H{r}"/>"#,
            l = n(LEFT),
            t = n(TOP),
            b = n(TOP + plot_h()),
            r = n(W - RIGHT)
        );
        Frame {
            out,
            y_lo: 0.0,
            y_hi,
        }
    }

    pub(super) fn y(&self, v: f64) -> f64 {
        TOP + plot_h() * (1.0 - (v - self.y_lo) / (self.y_hi - self.y_lo))
    }

    pub(super) fn x_tick(&mut self, x: f64, label: &str) {
        self.x_tick_anchored(x, label, "middle");
    }

    pub(super) fn x_tick_anchored(&mut self, x: f64, label: &str, anchor: &str) {
        let _ = write!(
            self.out,
            r#"<text class="tick" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
            n(x),
            n(TOP + plot_h() + 16.0),
            esc(label)
        );
    }

    pub(super) fn close(mut self, marks: &str) -> String {
        let _ = write!(self.out, r#"<g class="marks">{marks}</g></svg>"#);
        self.out
    }
}

/// A chart with nothing to draw.
pub(super) fn empty_chart(id: &str, title: &str, x_label: &str, y_label: &str) -> String {
    let mut out = Frame::open(id, title, "No data", x_label, y_label, true);
    let _ = write!(
        out,
        r#"<text class="nodata" x="{}" y="{}" text-anchor="middle">No data</text></svg>"#,
        n(LEFT + plot_w() / 2.0),
        n(TOP + plot_h() / 2.0)
    );
    out
}

/// A named series of a sweep chart; `None` where a run has no value.
pub struct Series<'a> {
    /// Legend text.
    pub name: &'a str,
    /// One value per x position.
    pub values: Vec<Option<f64>>,
}

/// Lines with markers over categorical x positions (the runs of the sweep: concurrency or rate).
pub fn sweep_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    xs: &[String],
    series: &[Series<'_>],
) -> String {
    let finite = || {
        series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .filter(|v| v.is_finite())
    };
    if xs.is_empty() || finite().next().is_none() {
        return empty_chart(id, title, x_label, y_label);
    }
    let y_max = finite().fold(0.0f64, |a, b| a.max(*b));
    let desc = format!("{y_label} against {x_label} for {} runs", xs.len());
    let mut f = Frame::new(id, title, &desc, x_label, y_label, y_max);
    let step = plot_w() / xs.len() as f64;
    let x_at = |i: usize| LEFT + step * (i as f64 + 0.5);
    for (i, x) in xs.iter().enumerate() {
        f.x_tick(x_at(i), x);
    }
    let mut marks = String::new();
    for (k, s) in series.iter().enumerate() {
        let mut d = String::new();
        let mut pen_down = false;
        for (i, v) in s.values.iter().enumerate() {
            match v.filter(|v| v.is_finite()) {
                Some(v) => {
                    let _ = write!(
                        d,
                        "{}{} {}",
                        if pen_down { "L" } else { "M" },
                        n(x_at(i)),
                        n(f.y(v))
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let _ = write!(marks, r#"<path class="line s{k}" d="{d}"/>"#);
        for (i, v) in s.values.iter().enumerate() {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                let _ = write!(
                    marks,
                    r#"<circle class="dot s{k}" cx="{}" cy="{}" r="3.5"><title>{}: {} at {} {}</title></circle>"#,
                    n(x_at(i)),
                    n(f.y(v)),
                    esc(s.name),
                    label_num(v),
                    esc(x_label),
                    esc(&xs[i])
                );
            }
        }
    }
    // Legend, top right.
    let mut x = W - RIGHT;
    for (k, s) in series.iter().enumerate().rev() {
        let w = 18.0 + 7.0 * s.name.chars().count() as f64;
        x -= w;
        let _ = write!(
            marks,
            r#"<rect class="key s{k}" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">{}</text>"#,
            n(x),
            n(x + 13.0),
            esc(s.name)
        );
        x -= 8.0;
    }
    f.close(&marks)
}

/// Histogram bins: equal widths from `lo` to `hi`, plus the count above `hi` (drawn as the last bar).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bins {
    /// Lower edge of the first bin.
    pub lo: f64,
    /// Upper edge of the last bin.
    pub hi: f64,
    /// Counts, left to right.
    pub counts: Vec<u64>,
    /// Values above `hi`.
    pub above: u64,
    /// The largest value (the end of the overflow bar).
    pub max: f64,
}

impl Bins {
    /// Every value counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.above
    }
}

/// A histogram; the overflow bar (values above the 99th percentile) is labelled with its range.
pub fn histogram_chart(id: &str, title: &str, x_label: &str, bins: &Bins) -> String {
    if bins.total() == 0 || bins.counts.is_empty() {
        return empty_chart(id, title, x_label, "requests");
    }
    let n_bars = bins.counts.len() + usize::from(bins.above > 0);
    let y_max = bins
        .counts
        .iter()
        .copied()
        .chain([bins.above])
        .max()
        .unwrap_or(1) as f64;
    let desc = format!(
        "{} values from {} to {}; {} above {}",
        bins.total(),
        label_num(bins.lo),
        label_num(bins.max),
        bins.above,
        label_num(bins.hi)
    );
    let y_name = if x_label.starts_with("ITL") {
        "gaps"
    } else {
        "requests"
    };
    let mut f = Frame::new(id, title, &desc, x_label, y_name, y_max);
    let bar_w = plot_w() / n_bars as f64;
    let width = (bins.hi - bins.lo) / bins.counts.len() as f64;
    let mut marks = String::new();
    let bar = |marks: &mut String, i: usize, count: u64, class: &str, tip: String| {
        let y = f.y(count as f64);
        let _ = write!(
            marks,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}"><title>{tip}</title></rect>"#,
            n(LEFT + bar_w * i as f64 + 0.5),
            n(y),
            n((bar_w - 1.0).max(0.5)),
            n(TOP + plot_h() - y)
        );
    };
    for (i, &c) in bins.counts.iter().enumerate() {
        let a = bins.lo + width * i as f64;
        let tip = format!("{}–{}: {c}", label_num(a), label_num(a + width));
        bar(&mut marks, i, c, "bar", tip);
    }
    if bins.above > 0 {
        let tip = format!(
            "above p99 ({}–{}): {}",
            label_num(bins.hi),
            label_num(bins.max),
            bins.above
        );
        bar(&mut marks, bins.counts.len(), bins.above, "bar over", tip);
    }
    let mid = bins.counts.len() / 2;
    f.x_tick(LEFT, &label_num(bins.lo));
    f.x_tick(
        LEFT + bar_w * mid as f64,
        &label_num(bins.lo + width * mid as f64),
    );
    let edge = LEFT + bar_w * bins.counts.len() as f64;
    f.x_tick_anchored(edge, &format!("p99 {}", label_num(bins.hi)), "end");
    if bins.above > 0 {
        let text = format!("above p99 (up to {})", label_num(bins.max));
        let x = W - RIGHT - 13.0 - 6.5 * text.chars().count() as f64;
        let _ = write!(
            marks,
            r#"<rect class="key over" x="{}" y="8" width="10" height="10"/><text class="legend" x="{}" y="17">{}</text>"#,
            n(x),
            n(x + 13.0),
            esc(&text)
        );
    }
    f.close(&marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_never_repeat() {
        for hi in [0.0012, 0.004, 0.3, 7.0, 95.0, 2e-5, 1.5e4] {
            let ticks = nice_ticks(0.0, hi);
            let labels = tick_labels(&ticks);
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(unique, labels, "{hi}: {labels:?}");
        }
        assert_eq!(
            tick_labels(&nice_ticks(0.0, 0.0012)),
            ["0", "0.0005", "0.001", "0.0015"]
        );
        assert_eq!(
            tick_labels(&nice_ticks(0.0, 9.3)),
            ["0", "2", "4", "6", "8", "10"]
        );
        assert_eq!(tick_labels(&[0.0, 20_000.0]), ["0", "20k"]);
    }

    #[test]
    fn ticks_are_nice_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 9.3), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let labels: Vec<String> = nice_ticks(0.0, 0.42).into_iter().map(label_num).collect();
        assert_eq!(labels, ["0", "0.1", "0.2", "0.3", "0.4", "0.5"]);
        let t = nice_ticks(0.0, 1234.0);
        assert!(*t.last().unwrap() >= 1234.0 && t.len() <= 8, "{t:?}");
        assert_eq!(label_num(0.30000000000000004), "0.3");
        assert_eq!(label_num(1234.56), "1235");
        assert_eq!(label_num(12.345), "12.3");
        assert_eq!(axis_num(200_000.0), "200k");
        assert_eq!(axis_num(2_500_000.0), "2.5M");
        assert_eq!(axis_num(5000.0), "5000");
    }

    #[test]
    fn empty_charts_say_so() {
        let svg = histogram_chart("h", "TTFT", "TTFT (ms)", &Bins::default());
        assert!(svg.contains(r#"data-empty="true""#) && svg.contains("No data"));
        assert!(!svg.contains("class=\"marks\""));
    }

    #[test]
    fn sweep_chart_draws_every_series_and_skips_missing_points() {
        let xs = vec!["1".to_string(), "4".to_string()];
        let svg = sweep_chart(
            "c",
            "TTFT",
            "concurrency",
            "ms",
            &xs,
            &[
                Series {
                    name: "p50",
                    values: vec![Some(10.0), Some(12.0)],
                },
                Series {
                    name: "p99",
                    values: vec![None, Some(30.0)],
                },
            ],
        );
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("p99: 30 at concurrency 4"), "{svg}");
        assert!(svg.starts_with(r#"<svg class="chart" data-chart="c""#));
    }
}
