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

/// The lines of the table titled `title` (its title line to its bottom border).
fn table<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == title)
        .unwrap_or_else(|| panic!("no {title} in {text}"));
    let end = lines[start..]
        .iter()
        .position(|l| l.starts_with('└'))
        .unwrap();
    lines[start..=start + end].to_vec()
}

/// evalscope's `test_rich_display.py`: the overview sorted by concurrency (open-loop runs by rate, `-` for
/// their concurrency), TTFT/TPOT rows only when measured, `Decode toks/s` = 1000 / TPOT, and the
/// per-trace and workload tables once for a whole sweep, only when some run has them.
#[test]
fn tables_are_sorted_and_sections_appear_once_when_present() {
    let streamed = |conc: i64, rate: f64| {
        let mut r = run(conc, rate, SummaryExtras::default());
        (r.summary.avg_ttft_ms, r.summary.avg_tpot_ms) = (100.0, 20.0);
        r
    };
    let text = performance_summary(&info(), &[streamed(4, -1.0), streamed(2, -1.0)]);
    let overview = table(&text, "Performance Overview");
    let first_conc = |rows: &[&str], a: &str, b: &str| {
        let pos = |s: &str| rows.iter().position(|l| l.starts_with(s)).unwrap();
        pos(a) < pos(b)
    };
    assert!(first_conc(&overview, "│    2 │", "│    4 │"), "{text}");
    let per_request = table(&text, "Per-Request Metrics");
    assert!(per_request.iter().any(|l| l.contains("TTFT (ms)")));
    assert!(
        per_request
            .iter()
            .any(|l| l.contains("Decode toks/s") && l.contains(" 50 ")),
        "{text}"
    );
    assert!(!text.contains("Per-Trace Metrics") && !text.contains("Workload Throughput"));
    // Open loop: `-` for the concurrency, sorted by rate.
    let text = performance_summary(&info(), &[streamed(-1, 10.0), streamed(-1, 5.0)]);
    let overview = table(&text, "Performance Overview");
    assert!(
        first_conc(&overview, "│    - │    5 │", "│    - │   10 │"),
        "{text}"
    );
    // Nothing streamed: no TTFT, TPOT or decode rows.
    let text = performance_summary(&info(), &[run(2, -1.0, SummaryExtras::default())]);
    let per_request = table(&text, "Per-Request Metrics");
    assert!(
        !per_request
            .iter()
            .any(|l| l.contains("TTFT") || l.contains("TPOT") || l.contains("Decode")),
        "{text}"
    );
    // A sweep whose runs have traces and workload figures: each table once.
    let with_sections = |conc: i64| {
        let mut r = streamed(conc, -1.0);
        r.trace = crate::metrics::TraceSummary {
            n_traces: 3,
            rows: vec![crate::metrics::trace::TraceRow {
                metric: "Latency (s)",
                stats: [51.3, 13.8, 53.1, 80.2, 83.6, 86.3, 87.0],
            }],
        };
        let mut timeline = crate::metrics::WorkloadTimeline::default();
        timeline.feed(0.0, 1.0, 10, 10, 0);
        r.workload = timeline.throughput();
        r
    };
    let text = performance_summary(&info(), &[with_sections(2), with_sections(4)]);
    assert_eq!(text.matches("Per-Trace Metrics").count(), 1, "{text}");
    assert_eq!(text.matches("Workload Throughput").count(), 1, "{text}");
    assert!(text.contains("51.3") && text.contains("Last 30s"), "{text}");
}
