//! `perf_report.html` from hand-made run databases: every chart drawn, nothing fetched, the size bound
//! for a 10,000-request sweep, the interrupted marker and the generic diagnostics.

use std::path::Path;

use rusqlite::{params, Connection};

use super::{render, HtmlHeader, HtmlRun};
use crate::export::report::RunReport;
use crate::metrics::{BenchmarkSummary, PercentileTable, SummaryExtras};

/// A `result` table with `n` requests: every 50th fails; the rest stream `itl_per_request + 1` chunks.
fn make_db(path: &Path, n: usize, itl_per_request: usize) {
    let mut con = Connection::open(path).unwrap();
    con.execute_batch(
        "CREATE TABLE result(request TEXT, start_time REAL, inter_token_latencies TEXT, success INTEGER, \
         response_messages TEXT, completed_time REAL, latency REAL, first_chunk_latency REAL, \
         prompt_tokens INTEGER, completion_tokens INTEGER, max_gpu_memory_cost REAL, \
         time_per_output_token REAL, request_id TEXT, is_stream INTEGER)",
    )
    .unwrap();
    let tx = con.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO result (request, start_time, inter_token_latencies, success, completed_time, \
                 latency, first_chunk_latency, prompt_tokens, completion_tokens, is_stream) \
                 VALUES ('{}', ?1, ?2, ?3, ?4, ?5, ?6, 16, ?7, 1)",
            )
            .unwrap();
        for i in 0..n {
            let start = 100.0 + i as f64 * 0.01;
            let ttft = 0.05 + (i % 7) as f64 * 0.01;
            let itl: Vec<String> = (0..itl_per_request)
                .map(|k| format!("{}", 0.01 + ((i + k) % 5) as f64 * 0.001))
                .collect();
            let latency = ttft + 0.012 * itl_per_request as f64;
            let ok = i % 50 != 49;
            let itl_text = if ok {
                format!("[{}]", itl.join(", "))
            } else {
                "[]".into()
            };
            stmt.execute(params![
                start,
                itl_text,
                ok as i64,
                start + latency,
                ok.then_some(latency),
                ok.then_some(ttft),
                ok.then_some(itl_per_request as i64 + 1),
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn percentiles() -> PercentileTable {
    let col = |k: &str, v: [f64; 11]| (k.to_string(), v);
    PercentileTable {
        columns: vec![
            col(
                "Latency (s)",
                [0.8, 0.8, 0.8, 0.8, 0.82, 0.84, 0.86, 0.88, 0.89, 0.9, 0.91],
            ),
            col(
                "TTFT (ms)",
                [
                    50.0, 50.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 105.0, 110.0, 110.0,
                ],
            ),
            col(
                "ITL (ms)",
                [
                    10.0, 10.0, 10.0, 10.0, 11.0, 12.0, 13.0, 13.5, 13.8, 13.9, 14.0,
                ],
            ),
            col(
                "TPOT (ms)",
                [
                    11.0, 11.0, 11.0, 11.0, 11.5, 12.0, 12.5, 12.8, 12.9, 13.0, 13.0,
                ],
            ),
        ],
    }
}

fn run(dir: &Path, conc: i64, n: usize, itl: usize, extras: &str) -> HtmlRun {
    let name = format!("parallel_{conc}_number_{n}");
    let db_path = dir.join(format!("{name}.db"));
    make_db(&db_path, n, itl);
    let failed = (n / 50) as u64;
    let summary = BenchmarkSummary {
        test_duration_s: 12.5,
        concurrency: conc,
        request_rate: -1.0,
        total_requests: n as u64,
        success_requests: n as u64 - failed,
        failed_requests: failed,
        req_throughput: 10.0 * conc as f64,
        output_throughput: 100.0 * conc as f64,
        avg_ttft_ms: 80.0,
        extras: SummaryExtras {
            failures_by_kind: vec![("http_status".into(), failed)],
            ..Default::default()
        },
        ..Default::default()
    };
    let (concurrency, rate) = RunReport::load_of(&summary);
    HtmlRun {
        name,
        report: RunReport {
            concurrency,
            rate,
            number: n as u64,
            summary,
            percentiles: percentiles(),
            workload: None,
            trace: Default::default(),
        },
        db_path,
        server: None,
        summary_json: format!(r#"{{"Test Duration (s)": 12.5, "Concurrency": {conc}{extras}}}"#),
    }
}

fn header(interrupted: bool) -> HtmlHeader {
    HtmlHeader {
        model: "org/<model>".into(),
        endpoint: "127.0.0.1:8000".into(),
        dataset: "openqa".into(),
        api: "openai".into(),
        alias: None,
        output_path: "outputs/x".into(),
        version: "0.1.0".into(),
        generated_at: "2026-01-01 00:00:00".into(),
        interrupted,
    }
}

/// Chart ids of a page, with whether each drew anything.
fn charts(html: &str) -> Vec<(String, bool)> {
    html.split(r#"<svg class="chart" data-chart=""#)
        .skip(1)
        .map(|rest| {
            let id = rest.split('"').next().unwrap().to_string();
            let head = rest.split('>').next().unwrap();
            (id, !head.contains("data-empty"))
        })
        .collect()
}

#[test]
fn a_ten_thousand_request_sweep_fits_in_two_megabytes_with_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let runs = vec![
        run(dir.path(), 1, 400, 32, ""),
        run(dir.path(), 4, 4_600, 32, ""),
        run(dir.path(), 16, 5_000, 32, ""),
    ];
    let html = render(&header(false), &runs);
    assert!(html.len() < 2 * 1024 * 1024, "{} bytes", html.len());
    let charts = charts(&html);
    let mut ids: Vec<&str> = charts.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort();
    let mut want = vec![
        "throughput-rps",
        "throughput-tok",
        "latency-ttft",
        "latency-itl",
        "latency-tpot",
        "latency-latency",
    ];
    for i in 0..3 {
        for kind in ["ttft-hist", "itl-hist", "timeline", "tok-rate"] {
            want.push(Box::leak(format!("{kind}-{i}").into_boxed_str()));
        }
    }
    want.sort();
    assert_eq!(ids, want);
    assert!(charts.iter().all(|(_, drawn)| *drawn), "{charts:?}");
    // The timeline of the 5,000-request run is sampled; percentiles are not.
    assert!(
        html.contains("showing 525 of 5000 requests (1 in 10, plus failures)"),
        "sampling note"
    );
    assert!(html.contains("all 400 requests"));
    // Self-contained: nothing to fetch, no script.
    for needle in ["<script", "src=", "href=\"http", "url(", "@import", "<link"] {
        assert!(!html.contains(needle), "{needle}");
    }
    assert!(html.contains("org/&lt;model&gt;"), "escaped model name");
    assert!(html.contains("prefers-color-scheme: dark") && html.contains("@media print"));
    assert!(
        html.contains(r#"<caption id="failures-caption">"#),
        "failures table"
    );
    assert!(!html.contains("role=\"alert\""), "not interrupted");
}

#[test]
fn interrupted_sweeps_are_marked_and_extras_are_rendered_generically() {
    let dir = tempfile::tempdir().unwrap();
    let extras = r#", "Interrupted": true, "Client CPU (%)": 12.5, "Send Lag (ms)": {"p50": 0.25, "p99": 3.5}"#;
    let runs = vec![run(dir.path(), 2, 40, 4, extras)];
    let html = render(&header(true), &runs);
    assert!(html.contains(r#"<p class="banner" role="alert">Interrupted"#));
    for cell in [
        "Client CPU (%)",
        "Send Lag (ms) / p50",
        "Send Lag (ms) / p99",
        "Interrupted",
    ] {
        assert!(
            html.contains(&format!(r#"<th scope="row">{}</th>"#, super::esc(cell))),
            "{cell}"
        );
    }
    assert!(html.contains("<td>12.5</td>") && html.contains("<td>3.5</td>"));
    assert!(
        !html.contains(r#"<th scope="row">Concurrency</th>"#),
        "evalscope keys are not diagnostics"
    );
}

#[test]
fn an_unreadable_database_still_gives_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = run(dir.path(), 1, 10, 2, "");
    r.db_path = dir.path().join("missing.db");
    let html = render(&header(false), &[r]);
    assert!(html.contains(r#"data-chart="timeline-0""#));
    assert!(html.contains("No data"));
    assert!(html.contains("parallel_1_number_10"));
}
