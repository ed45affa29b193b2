//! llmperf's own metrics in the Prometheus text exposition format (version 0.0.4), written by hand from
//! the live board: names `llmperf_…`, times in seconds, counters ending `_total`, every series labelled
//! `run`, `point` (the run folder of the sweep point) and `shard`, so a fleet of shards and a whole sweep
//! are one query (`sum by (point) (llmperf_requests_completed_total{run="…"})`).

use std::fmt::Write;

use crate::live::{Board, Histogram, Point, PointStats, Target};
use crate::record::FailureKind;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value escaped for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: integers as such, infinities as `+Inf`/`-Inf`.
fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.is_nan() {
        "NaN".to_string()
    } else {
        format!("{v}")
    }
}

/// The text written for one family: its help and type lines, then its samples.
struct Family<'a> {
    out: &'a mut String,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &str, kind: &str, help: &str) -> Self {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        Family { out }
    }

    fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = writeln!(self.out, "{name}{{{labels}}} {}", number(value));
    }
}

/// `run="…",shard="…"` for `board`.
fn board_labels(board: &Board) -> String {
    format!(
        "run=\"{}\",shard=\"{}\"",
        escape(&board.run),
        board.shard.map(|k| k.to_string()).unwrap_or_default()
    )
}

/// `run="…",point="…",shard="…"` for `point` of `board`.
fn point_labels(board: &Board, point: &Point) -> String {
    format!(
        "run=\"{}\",point=\"{}\",shard=\"{}\"",
        escape(&board.run),
        escape(&point.desc.name),
        board.shard.map(|k| k.to_string()).unwrap_or_default()
    )
}

/// A per-point family: one sample per point from `value`.
fn per_point(
    out: &mut String,
    rows: &[(String, &Point, PointStats)],
    name: &str,
    kind: &str,
    help: &str,
    value: impl Fn(&Point, &PointStats) -> Option<f64>,
) {
    let samples: Vec<(&str, f64)> = rows
        .iter()
        .filter_map(|(labels, p, s)| Some((labels.as_str(), value(p, s)?)))
        .collect();
    if samples.is_empty() {
        return;
    }
    let mut fam = Family::new(out, name, kind, help);
    for (labels, v) in samples {
        fam.sample(name, labels, v);
    }
}

fn histogram(
    out: &mut String,
    rows: &[(String, &Point, PointStats)],
    name: &str,
    help: &str,
    pick: impl Fn(&PointStats) -> &Histogram,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for (labels, _, s) in rows {
        let h = pick(s);
        for (le, count) in h.cumulative() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {count}",
                number(le)
            );
        }
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", number(h.sum));
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
    }
}

/// The whole exposition for `board`.
pub fn render(board: &Board) -> String {
    let points = board.points();
    let rows: Vec<(String, &Point, PointStats)> = points
        .iter()
        .map(|p| (point_labels(board, p), p.as_ref(), p.stats()))
        .collect();
    let mut out = String::with_capacity(4096 + rows.len() * 8192);
    sweep_gauges(&mut out, board, &points);
    point_gauges(&mut out, &rows);
    request_counters(&mut out, &rows);
    latency_histograms(&mut out, &rows);
    out
}

/// The sweep's own gauges: the point being sent, the points planned, whether it has finished.
fn sweep_gauges(out: &mut String, board: &Board, points: &[std::sync::Arc<Point>]) {
    let labels = board_labels(board);
    let current = points
        .iter()
        .rev()
        .find(|p| !p.is_finished())
        .map_or(0, |p| p.desc.index);
    Family::new(
        out,
        "llmperf_sweep_current_point",
        "gauge",
        "1-based place in the sweep of the run being sent now (0: none).",
    )
    .sample("llmperf_sweep_current_point", &labels, current as f64);
    if let Some(n) = board.planned {
        Family::new(
            out,
            "llmperf_sweep_points_planned",
            "gauge",
            "Runs the sweep plans.",
        )
        .sample("llmperf_sweep_points_planned", &labels, n as f64);
    }
    Family::new(
        out,
        "llmperf_sweep_finished",
        "gauge",
        "1 once every run of the sweep has ended.",
    )
    .sample(
        "llmperf_sweep_finished",
        &labels,
        f64::from(u8::from(board.is_finished())),
    );
}

/// Each point's place, state and target.
fn point_gauges(out: &mut String, rows: &[(String, &Point, PointStats)]) {
    per_point(
        out,
        rows,
        "llmperf_sweep_point",
        "gauge",
        "1-based place of the run (sweep point) in the sweep.",
        |p, _| Some(p.desc.index as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_point_running",
        "gauge",
        "1 while the run is being sent, else 0.",
        |p, _| Some(f64::from(u8::from(!p.is_finished()))),
    );
    per_point(
        out,
        rows,
        "llmperf_requests_planned",
        "gauge",
        "Measured requests the run sends (this shard's share).",
        |p, _| Some(p.desc.total as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_target_concurrency",
        "gauge",
        "Closed loop: requests in flight at most.",
        |p, _| match p.desc.target {
            Target::Concurrency { parallel, .. } => Some(parallel as f64),
            _ => None,
        },
    );
    per_point(
        out,
        rows,
        "llmperf_target_rate_requests_per_second",
        "gauge",
        "Open loop or paced closed loop: the arrival rate aimed at.",
        |p, _| match p.desc.target {
            Target::Concurrency { rate, .. } => rate,
            Target::Rate(r) => Some(r),
            Target::Trace => None,
        },
    );
}

/// Each point's request and token counters, failures by kind.
fn request_counters(out: &mut String, rows: &[(String, &Point, PointStats)]) {
    per_point(
        out,
        rows,
        "llmperf_requests_sent_total",
        "counter",
        "Requests started (warmup included).",
        |p, _| Some(p.sent() as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_requests_in_flight",
        "gauge",
        "Requests started and not finished (warmup included).",
        |p, _| Some(p.in_flight() as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_warmup_requests_completed_total",
        "counter",
        "Warmup requests finished (never stored).",
        |p, _| Some(p.warmup_done() as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_requests_completed_total",
        "counter",
        "Measured requests finished, each a row of the run's database.",
        |_, s| Some(s.completed as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_requests_succeeded_total",
        "counter",
        "Measured requests that succeeded.",
        |_, s| Some(s.succeeded as f64),
    );
    let name = "llmperf_requests_failed_total";
    let mut fam = Family::new(
        out,
        name,
        "counter",
        "Measured requests that failed, by kind (the failure_kind column).",
    );
    for (labels, _, s) in rows {
        for kind in FailureKind::ALL {
            let l = format!("{labels},kind=\"{}\"", kind.label());
            fam.sample(name, &l, s.failed[kind.index()] as f64);
        }
    }
    per_point(
        out,
        rows,
        "llmperf_input_tokens_total",
        "counter",
        "Prompt tokens of the successful requests.",
        |_, s| Some(s.input_tokens as f64),
    );
    per_point(
        out,
        rows,
        "llmperf_output_tokens_total",
        "counter",
        "Completion tokens of the successful requests.",
        |_, s| Some(s.output_tokens as f64),
    );
}

/// Each point's latency histograms, and the client's own send and read lags.
fn latency_histograms(out: &mut String, rows: &[(String, &Point, PointStats)]) {
    histogram(
        out,
        rows,
        "llmperf_time_to_first_token_seconds",
        "Time to first token of the successful requests (evalscope's TTFT).",
        |s| &s.ttft,
    );
    histogram(
        out,
        rows,
        "llmperf_inter_token_latency_seconds",
        "Gaps between output chunks of the successful requests (evalscope's ITL).",
        |s| &s.itl,
    );
    histogram(
        out,
        rows,
        "llmperf_request_latency_seconds",
        "Whole-request latency of the successful requests.",
        |s| &s.latency,
    );
    histogram(
        out,
        rows,
        "llmperf_send_lag_seconds",
        "Actual minus intended send time of each measured request (the client's own delay).",
        |s| &s.send_lag,
    );
    histogram(
        out,
        rows,
        "llmperf_read_lag_seconds",
        "Longest wait of a response's bytes in the socket before llmperf read them.",
        |s| &s.read_lag,
    );
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn labels_are_escaped_and_values_written_as_the_format_wants() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.00005), "0.00005");
    }

    #[test]
    fn every_point_has_its_series_and_the_sweep_its_gauges() {
        let board = Board::new("de\"mo".into(), Some(3), Some(2), "m".into());
        let feed = board.start_point(
            "parallel_2_number_4".into(),
            4,
            Target::Concurrency {
                parallel: 2,
                rate: None,
            },
            Arc::new(AtomicU64::new(0)),
        );
        let text = render(&board);
        let labels = r#"{run="de\"mo",point="parallel_2_number_4",shard="3"}"#;
        for needle in [
            "llmperf_sweep_current_point{run=\"de\\\"mo\",shard=\"3\"} 1\n".to_string(),
            "llmperf_sweep_points_planned{run=\"de\\\"mo\",shard=\"3\"} 2\n".to_string(),
            format!("llmperf_target_concurrency{labels} 2\n"),
            format!("llmperf_requests_completed_total{labels} 0\n"),
            format!("llmperf_point_running{labels} 1\n"),
            "llmperf_requests_failed_total{run=\"de\\\"mo\",point=\"parallel_2_number_4\",shard=\"3\",kind=\"reset\"} 0\n".to_string(),
            "llmperf_time_to_first_token_seconds_bucket{run=\"de\\\"mo\",point=\"parallel_2_number_4\",shard=\"3\",le=\"+Inf\"} 0\n".to_string(),
        ] {
            assert!(text.contains(&needle), "{needle} missing from\n{text}");
        }
        assert!(
            !text.contains("llmperf_target_rate_requests_per_second"),
            "no family without samples"
        );
        feed.finish();
        board.finish();
        let text = render(&board);
        assert!(text.contains("llmperf_sweep_current_point{run=\"de\\\"mo\",shard=\"3\"} 0\n"));
        assert!(text.contains("llmperf_sweep_finished{run=\"de\\\"mo\",shard=\"3\"} 1\n"));
    }
}
