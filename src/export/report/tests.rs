//! Tests of `performance_summary` beyond the goldens: llmperf's extras, the alias row, empty reports.

use crate::export::report::{performance_summary, ReportInfo, RunReport};
use crate::metrics::SummaryExtras;
use crate::metrics::{BenchmarkSummary, PercentileTable};

fn run(conc: i64, rate: f64, extras: SummaryExtras) -> RunReport {
    let summary = BenchmarkSummary {
        test_duration_s: 2.0,
        concurrency: conc,
        request_rate: rate,
        total_requests: 4,
        success_requests: 3,
        failed_requests: 1,
        req_throughput: 1.5,
        avg_latency_s: 0.2,
        avg_input_tokens: 7.0,
        avg_output_tokens: 5.0,
        output_throughput: 7.5,
        extras,
        ..Default::default()
    };
    let (concurrency, rate) = RunReport::load_of(&summary);
    RunReport {
        concurrency,
        rate,
        number: 4,
        summary,
        percentiles: PercentileTable::default(),
        workload: None,
        trace: Default::default(),
    }
}

fn info() -> ReportInfo {
    ReportInfo {
        model: "m".into(),
        dataset: "random".into(),
        api: "openai".into(),
        alias: Some("nightly".into()),
        endpoint: "127.0.0.1:8000".into(),
        output_path: "outputs/x".into(),
        input_only: false,
    }
}

#[test]
fn extras_follow_evalscope_text() {
    let failures = SummaryExtras {
        interrupted: true,
        failures_by_kind: vec![("http_500".into(), 1), ("timeout".into(), 2)],
        ..Default::default()
    };
    let runs = vec![
        run(-1, 5.0, failures),
        run(2, -1.0, SummaryExtras::default()),
    ];
    let plain: Vec<RunReport> = runs
        .iter()
        .cloned()
        .map(|mut r| {
            r.summary.extras = SummaryExtras::default();
            r
        })
        .collect();
    let base = performance_summary(&info(), &plain);
    let text = performance_summary(&info(), &runs);
    assert!(
        text.starts_with(&base),
        "evalscope's text is an unchanged prefix"
    );
    let extra = &text[base.len()..];
    let expected = "\n\n\
        \x20           Failures             \n\
        ┏━━━━━━┳━━━━━━┳━━━━━━━━━━┳━━━━━━┓\n\
        ┃Conc. ┃ Rate ┃ Kind     ┃ Count┃\n\
        ┡━━━━━━╇━━━━━━╇━━━━━━━━━━╇━━━━━━┩\n\
        │    - │    5 │ http_500 │     1│\n\
        │      │      │ timeout  │     2│\n\
        └──────┴──────┴──────────┴──────┘\n\
        \n\
        ! Run rate 5 was interrupted: results cover the requests completed before the signal.\n";
    assert_eq!(extra, expected);
    assert!(
        base.contains("│ Alias                 │ nightly "),
        "{base}"
    );
    // Closed loop first, open loop (conc −1) last; percentiles absent → "-".
    assert!(
        base.contains("│    2 │    - │ Latency (s)   │ 0.2 │   - │   - │   -│"),
        "{base}"
    );
    assert!(
        base.contains("│    2 │    - │   4 │ 1.5 │   7.5 │     75%│"),
        "{base}"
    );
}

#[test]
fn nothing_to_report() {
    assert_eq!(performance_summary(&info(), &[]), "");
    let mut embed = info();
    embed.input_only = true;
    // No p99 latency: evalscope skips the run and, with no rows left, writes no report.
    let runs = [run(2, -1.0, SummaryExtras::default())];
    assert_eq!(performance_summary(&embed, &runs), "");
}
