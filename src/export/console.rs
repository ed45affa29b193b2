//! The per-run console tables evalscope logs after each run: `Benchmarking summary:`,
//! `Percentile results:` and `Workload throughput (N samples):` (tabulate `simple_outline`), plus llmperf's
//! extra rows.
//!
//! Rows follow evalscope's `BenchmarkSummary.to_table`: sections `── General ──`, `── Latency ──`,
//! `── Tokens ──`; `Stream / Non-Stream` only when both counts are positive; the TTFT / TPOT / ITL,
//! output-token and throughput rows only when non-zero; `── Multi-turn ──` with the turns per request, the KV cache hit
//! rate and the first- vs later-turn TTFT when present. llmperf appends a `── llmperf ──` section (interrupted run,
//! failures by kind, the client's self-diagnostics: CPU use, send lag, open-loop TTFT / latency from the
//! intended send time, whether the client limited the run; with `--goodput`, goodput and SLO attainment)
//! after evalscope's rows, which stay identical, and after the table one `First <kind> error: …` line per
//! failure kind (its HTTP status and the start of its error text).

use crate::metrics::{
    BenchmarkSummary, ClientDiagnostics, PercentileTable, SummaryExtras, WorkloadThroughput,
    PERCENTILE_LABELS,
};

use crate::text::format::{fmt_num, unit_for_key, Unit};
use crate::text::table::{Align, SimpleOutline};

/// Logs a finished run's summary and percentile tables, as evalscope does after each run.
pub fn log_summary_tables(summary: &BenchmarkSummary, percentiles: &PercentileTable) {
    tracing::info!("\n{}", summary_table(summary));
    tracing::info!("\n{}", percentile_table(percentiles));
}

/// Logs a finished run's workload table (only a run in which a request succeeded has one).
pub fn log_workload_table(w: &WorkloadThroughput) {
    tracing::info!("\n{}", workload_table(w));
}

/// `Benchmarking summary:` and the summary table, lines joined by `\n`, no trailing newline.
pub fn summary_table(s: &BenchmarkSummary) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let add = |rows: &mut Vec<(String, String)>, key: &str, value: f64| {
        rows.push((key.to_string(), unit_for_key(key).fmt(value)));
    };
    let section = |rows: &mut Vec<(String, String)>, name: &str| {
        rows.push((format!("── {name} ──"), String::new()));
    };

    section(&mut rows, "General");
    add(&mut rows, "Test Duration (s)", s.test_duration_s);
    add(&mut rows, "Concurrency", s.concurrency as f64);
    add(&mut rows, "Request Rate (req/s)", s.request_rate);
    rows.push((
        "Total / Success / Failed".to_string(),
        format!(
            "{} / {} / {}",
            s.total_requests, s.success_requests, s.failed_requests
        ),
    ));
    if s.stream_requests > 0 && s.non_stream_requests > 0 {
        rows.push((
            "Stream / Non-Stream".to_string(),
            format!("{} / {}", s.stream_requests, s.non_stream_requests),
        ));
    }
    add(&mut rows, "Req Throughput (req/s)", s.req_throughput);

    section(&mut rows, "Latency");
    add(&mut rows, "Avg Latency (s)", s.avg_latency_s);
    for (key, value) in [
        ("Avg TTFT (ms)", s.avg_ttft_ms),
        ("Avg TPOT (ms)", s.avg_tpot_ms),
        ("Avg ITL (ms)", s.avg_itl_ms),
    ] {
        if value != 0.0 {
            add(&mut rows, key, value);
        }
    }
    for (key, value) in [
        ("Avg Steady ITL (ms)", s.avg_steady_itl_ms),
        ("Avg PD Handoff Latency (ms)", s.avg_pd_handoff_latency_ms),
        ("Avg PD Handoff Overhead (ms)", s.avg_pd_handoff_overhead_ms),
    ] {
        if let Some(value) = value {
            add(&mut rows, key, value);
        }
    }

    section(&mut rows, "Tokens");
    add(&mut rows, "Avg Input Tokens", s.avg_input_tokens);
    for (key, value) in [
        ("Avg Output Tokens", s.avg_output_tokens),
        ("Output Throughput (tok/s)", s.output_throughput),
        ("Total Throughput (tok/s)", s.total_throughput),
        ("Input Throughput (tok/s)", s.input_throughput),
    ] {
        if value != 0.0 {
            add(&mut rows, key, value);
        }
    }

    let multi_turn = [
        ("Avg Turns/Request", s.avg_turns),
        ("KV Cache Hit Rate (%)", s.kv_cache_hit_rate_pct),
        ("Avg First-Turn TTFT (ms)", s.avg_first_turn_ttft_ms),
        ("Avg Subsequent-Turn TTFT (ms)", s.avg_later_turn_ttft_ms),
    ];
    if multi_turn.iter().any(|(_, v)| v.is_some()) {
        section(&mut rows, "Multi-turn");
        for (key, value) in multi_turn {
            if let Some(v) = value {
                add(&mut rows, key, v);
            }
        }
    }

    llmperf_rows(&mut rows, &s.extras);

    let mut table = SimpleOutline::new(
        vec!["Metric".into(), "Value".into()],
        vec![Align::Left, Align::Right],
    );
    for (k, v) in rows {
        table.push(vec![k, v]);
    }
    let mut text = format!("Benchmarking summary:\n{}", table.render());
    for e in &s.extras.first_errors {
        text.push_str(&format!("\nFirst {} error: {}", e.kind, e.line()));
    }
    text
}

/// The `── llmperf ──` section: what llmperf adds to evalscope's table (interruption, failures by kind, the
/// client's diagnostics, the load verdict and plateau, goodput); nothing when there is none of them.
fn llmperf_rows(rows: &mut Vec<(String, String)>, extras: &SummaryExtras) {
    if extras.interrupted
        || !extras.failures_by_kind.is_empty()
        || extras.client.is_some()
        || extras.goodput.is_some()
        || extras.load.is_some()
    {
        rows.push(("── llmperf ──".to_string(), String::new()));
        if extras.interrupted {
            rows.push(("Interrupted".to_string(), "yes".to_string()));
        }
        for (kind, count) in &extras.failures_by_kind {
            rows.push((format!("Failures ({kind})"), count.to_string()));
        }
        if let Some(c) = &extras.client {
            client_rows(rows, c);
        }
        if let Some(l) = &extras.load {
            load_rows(rows, l);
        }
        if let Some(p) = &extras.plateau {
            plateau_rows(rows, p);
        }
        if let Some(g) = &extras.goodput {
            rows.push(("Goodput (req/s)".to_string(), fmt_num(g.goodput_rps, 4)));
            rows.push((
                "SLO attainment".to_string(),
                format!("{}%", fmt_num(g.attainment_pct, 2)),
            ));
        }
    }
}

/// `a / b`, each with `digits` decimals at most.
fn pair(a: f64, b: f64, digits: u32) -> String {
    format!("{} / {}", fmt_num(a, digits), fmt_num(b, digits))
}

/// The client's self-diagnostics rows of the `── llmperf ──` section.
fn client_rows(rows: &mut Vec<(String, String)>, c: &ClientDiagnostics) {
    let pct = |v: f64| format!("{}%", fmt_num(v, 1));
    rows.push((
        "Client CPU 1 core / all".to_string(),
        format!("{} / {}", pct(c.cpu_pct_one_core), pct(c.cpu_pct_all_cores)),
    ));
    rows.push((
        "Client sched. delay (ms)".to_string(),
        fmt_num(c.sched_delay_ms, 3),
    ));
    rows.push((
        "Send lag p50 / p99 (ms)".to_string(),
        pair(c.send_lag_p50_ms, c.send_lag_p99_ms, 3),
    ));
    rows.push((
        "Read lag p50 / p99 (ms)".to_string(),
        pair(c.read_lag_p50_ms, c.read_lag_p99_ms, 3),
    ));
    if let Some(f) = &c.from_schedule {
        rows.push((
            "TTFT from sched. avg/p99".to_string(),
            format!("{} ms", pair(f.avg_ttft_ms, f.p99_ttft_ms, 2)),
        ));
        rows.push((
            "Lat. from sched. avg/p99".to_string(),
            format!("{} s", pair(f.avg_latency_s, f.p99_latency_s, 3)),
        ));
    }
    let limited = if c.limits.is_empty() {
        "no"
    } else {
        "YES (see warning)"
    };
    rows.push(("Client limited".to_string(), limited.to_string()));
}

/// The delivered-load rows of the `── llmperf ──` section (docs/load-verdict.md).
fn load_rows(rows: &mut Vec<(String, String)>, l: &crate::metrics::load::LoadVerdict) {
    if let Some(rate) = l.achieved_rate {
        let error = l
            .rate_error_pct
            .map(|e| format!(" ({}% vs --rate)", fmt_num(e, 2)))
            .unwrap_or_default();
        rows.push((
            "Achieved rate (req/s)".into(),
            format!("{}{error}", fmt_num(rate, 4)),
        ));
    }
    if let Some(d) = l.delivered_concurrency {
        rows.push(("Delivered concurrency".into(), fmt_num(d, 2)));
    }
    rows.push(("Max in flight".into(), l.max_in_flight.to_string()));
    let verdict = match l.as_configured {
        Some(true) => "yes",
        Some(false) => "NO (see warning)",
        None => "no rule applies",
    };
    rows.push(("Load as configured".into(), verdict.into()));
    if let Some(s) = l.reached_after_s {
        rows.push(("Load reached after (s)".into(), fmt_num(s, 2)));
    }
}

/// The plateau rows of the `── llmperf ──` section (docs/load-verdict.md): its window, or that there is
/// none; its throughputs and latencies.
fn plateau_rows(rows: &mut Vec<(String, String)>, p: &crate::metrics::load::Plateau) {
    let (Some(a), Some(b)) = (p.start_s, p.end_s) else {
        rows.push(("Plateau".into(), "none (see Plateau Rule)".into()));
        return;
    };
    let cover = p
        .coverage_pct
        .map(|c| format!(" ({}% of the run)", fmt_num(c, 1)))
        .unwrap_or_default();
    rows.push((
        "Plateau (s)".into(),
        format!("{} – {}{cover}", fmt_num(a, 2), fmt_num(b, 2)),
    ));
    if let Some(r) = p.request_throughput {
        rows.push(("Plateau req/s".into(), fmt_num(r, 4)));
    }
    if let Some(t) = p.output_throughput {
        rows.push(("Plateau output tok/s".into(), fmt_num(t, 2)));
    }
    for (label, stats) in [
        ("Plateau TTFT avg/p99 (s)", (p.ttft.avg_s, p.ttft.p99_s)),
        (
            "Plateau latency avg/p99 (s)",
            (p.latency.avg_s, p.latency.p99_s),
        ),
    ] {
        if let (Some(avg), Some(p99)) = stats {
            rows.push((label.into(), pair(avg, p99, 4)));
        }
    }
}

/// `Percentile results:` and one row per percentile column (`Metric`, then `min` … `max`), each value
/// in its column's unit (`Latency (s)` 3 decimals, `(ms)` 2, token counts 0, `(tok/s)` 2; NaN → `—`).
/// Lines joined by `\n`, no trailing newline.
pub fn percentile_table(p: &PercentileTable) -> String {
    let mut headers = vec!["Metric".to_string()];
    headers.extend(PERCENTILE_LABELS.iter().map(|l| l.to_string()));
    let mut aligns = vec![Align::Left];
    aligns.extend([Align::Right; 11]);
    let mut table = SimpleOutline::new(headers, aligns);
    for (key, values) in &p.columns {
        let unit: Unit = unit_for_key(key);
        let mut row = vec![key.clone()];
        row.extend(values.iter().map(|v| unit.fmt(*v)));
        table.push(row);
    }
    format!("Percentile results:\n{}", table.render())
}

/// `Workload throughput (N samples):` and the workload table (`Metric (tok/s)`, `Overall`, `Last 30s`,
/// `Steady (drop 20%)`; rates with 2 decimals). Lines joined by `\n`, no trailing newline.
pub fn workload_table(w: &WorkloadThroughput) -> String {
    let headers = vec![
        "Metric (tok/s)".to_string(),
        "Overall".to_string(),
        w.last_label(),
        w.steady_label(),
    ];
    let aligns = vec![Align::Left, Align::Right, Align::Right, Align::Right];
    let mut table = SimpleOutline::new(headers, aligns);
    for r in &w.rows {
        table.push(vec![
            r.metric.to_string(),
            Unit::TokPerSec.fmt(r.overall),
            Unit::TokPerSec.fmt(r.last_window),
            Unit::TokPerSec.fmt(r.steady_state),
        ]);
    }
    format!(
        "Workload throughput ({} samples):\n{}",
        w.n_samples,
        table.render()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llmperf_extras_only_when_present() {
        let mut s = BenchmarkSummary {
            test_duration_s: 1.0,
            concurrency: 2,
            request_rate: -1.0,
            total_requests: 4,
            success_requests: 3,
            failed_requests: 1,
            ..Default::default()
        };
        assert!(!summary_table(&s).contains("llmperf"));
        s.extras = SummaryExtras {
            interrupted: true,
            failures_by_kind: vec![("http_500".into(), 1)],
            ..Default::default()
        };
        let text = summary_table(&s);
        assert!(
            text.contains("│ ── llmperf ──            │           │"),
            "{text}"
        );
        assert!(
            text.contains("│ Interrupted              │       yes │"),
            "{text}"
        );
        assert!(
            text.contains("│ Failures (http_500)      │         1 │"),
            "{text}"
        );
        s.extras.first_errors = vec![crate::metrics::FirstError {
            kind: "http_500".into(),
            status: Some(500),
            excerpt: "HTTP 500 Internal Server Error: boom".into(),
        }];
        assert!(
            summary_table(&s)
                .ends_with("┘\nFirst http_500 error: HTTP 500 Internal Server Error: boom"),
            "{}",
            summary_table(&s)
        );
    }

    #[test]
    fn stream_split_and_kv_rows() {
        let s = BenchmarkSummary {
            stream_requests: 2,
            non_stream_requests: 6,
            kv_cache_hit_rate_pct: Some(45.25),
            ..Default::default()
        };
        let text = summary_table(&s);
        assert!(
            text.contains("│ Stream / Non-Stream      │     2 / 6 │"),
            "{text}"
        );
        assert!(
            text.contains("│ ── Multi-turn ──         │           │"),
            "{text}"
        );
        assert!(
            text.contains("│ KV Cache Hit Rate (%)    │      45.3 │"),
            "{text}"
        );
        assert!(!text.contains("Avg TTFT"));
    }
}
