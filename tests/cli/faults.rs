//! The fault matrix, through the CLI: `--api mock --mock-fault KIND:EVERY` makes every EVERY-th request
//! misbehave; each faulted request must be a failed row with its kind, status and error text (or a success
//! where evalscope's semantics say so), the run must go on, and the counts must be exact in the database,
//! `benchmark_summary.json`, the console table and `performance_summary.txt`.

use std::path::Path;
use std::process::Output;

use crate::common::*;

/// One failed or succeeded row: (success, failure_kind, status_code, error).
pub type KindRow = (bool, Option<String>, Option<i64>, Option<String>);

pub fn kind_rows(db: &Path) -> Vec<KindRow> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT success, failure_kind, status_code, error FROM result ORDER BY rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, i64>(0)? == 1, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// Runs `--api mock` with 1 ms timings, `number` requests at `parallel`, plus `extra`; returns the output
/// and the run folder.
pub fn mock_run(number: u64, parallel: u64, extra: &[&str]) -> (Output, RunDir) {
    let run = Run::new()
        .flags("--api mock --model m --prompt 'one two'")
        .flag("--number", number.to_string())
        .flag("--parallel", parallel.to_string())
        .flags(
            "--max-tokens 4 --mock-ttft-ms 1 --mock-itl-ms 1 --no-test-connection --no-timestamp",
        )
        .args(extra);
    (
        run.output(),
        run.run_dir(&format!("parallel_{parallel}_number_{number}")),
    )
}

/// What one fault must produce.
struct Expect {
    kind: &'static str,
    status: Option<i64>,
    error_has: &'static [&'static str],
}

/// Runs 9 requests with `fault:3` (requests 3, 6, 9 misbehave) and checks rows, summary, console and
/// report.
fn check_fault(fault: &str, extra: &[&str], expect: Expect) {
    let rule = format!("{fault}:3");
    let mut args = vec!["--mock-fault", &rule];
    args.extend_from_slice(extra);
    let (o, run) = mock_run(9, 3, &args);
    let stdout = ok(&o);
    let rows = kind_rows(&run.db());
    assert_eq!(rows.len(), 9, "{fault}: every request stored");
    let failed: Vec<&KindRow> = rows.iter().filter(|r| !r.0).collect();
    assert_eq!(
        failed.len(),
        3,
        "{fault}: exactly the faulted requests fail: {rows:?}"
    );
    for (_, kind, status, error) in &failed {
        assert_eq!(kind.as_deref(), Some(expect.kind), "{fault}: {error:?}");
        assert_eq!(*status, expect.status, "{fault}: {error:?}");
        let error = error.as_deref().unwrap_or("");
        for part in expect.error_has {
            assert!(error.contains(part), "{fault}: {part:?} not in {error:?}");
        }
        assert!(!error.contains('\n'), "{fault}: one line: {error:?}");
    }
    assert!(rows
        .iter()
        .filter(|r| r.0)
        .all(|r| r.1.is_none() && r.3.is_none()));
    let s = run.summary();
    assert_eq!(s["Total Requests"], 9);
    assert_eq!(s["Success Requests"], 6);
    assert_eq!(s["Failed Requests"], 3);
    assert_eq!(s["Failures By Kind"], serde_json::json!({ expect.kind: 3 }));
    let console = stderr(&o);
    assert!(
        console.contains(&format!("Failures ({})", expect.kind)),
        "{fault}: console table: {console}"
    );
    let report =
        std::fs::read_to_string(run.parent().unwrap().join("performance_summary.txt")).unwrap();
    assert_eq!(
        report.trim_end(),
        stdout.trim_end(),
        "the report printed is the one written"
    );
    let line = report
        .lines()
        .find(|l| l.contains(&format!(" {} ", expect.kind)))
        .unwrap_or_else(|| panic!("{fault}: no Failures row in\n{report}"));
    assert!(line.contains(" 3 "), "{line}");
}

#[test]
fn http_500() {
    check_fault(
        "http-500",
        &[],
        Expect {
            kind: "http_status",
            status: Some(500),
            error_has: &["HTTP 500", "simulated fault http-500"],
        },
    );
}

#[test]
fn http_503_with_retry_after() {
    check_fault(
        "http-503",
        &[],
        Expect {
            kind: "http_status",
            status: Some(503),
            error_has: &["HTTP 503", "Retry-After: 1", "simulated fault http-503"],
        },
    );
}

#[test]
fn http_429_with_retry_after() {
    check_fault(
        "http-429",
        &["--no-stream"],
        Expect {
            kind: "http_status",
            status: Some(429),
            error_has: &["HTTP 429", "Retry-After: 1", "rate_limit_exceeded"],
        },
    );
}

#[test]
fn http_400() {
    check_fault(
        "http-400",
        &[],
        Expect {
            kind: "http_status",
            status: Some(400),
            error_has: &["HTTP 400", "invalid_request_error"],
        },
    );
}

#[test]
fn connection_reset_mid_stream() {
    check_fault(
        "reset",
        &[],
        Expect {
            kind: "reset",
            status: Some(200),
            error_has: &["reset"],
        },
    );
}

#[test]
fn connection_reset_mid_body() {
    check_fault(
        "reset",
        &["--no-stream"],
        Expect {
            kind: "reset",
            status: Some(200),
            error_has: &["reset"],
        },
    );
}

#[test]
fn stream_cut_before_usage_and_done() {
    check_fault(
        "truncated",
        &[],
        Expect {
            kind: "bad_response",
            status: Some(200),
            error_has: &["without `data: [DONE]`", "no token usage"],
        },
    );
}

#[test]
fn malformed_json_chunk() {
    check_fault(
        "malformed",
        &[],
        Expect {
            kind: "malformed",
            status: Some(200),
            error_has: &["malformed stream event", "not valid JSON", "{\"ind"],
        },
    );
}

#[test]
fn malformed_json_body() {
    check_fault(
        "malformed",
        &["--no-stream"],
        Expect {
            kind: "malformed",
            status: Some(200),
            error_has: &["malformed response body", "not valid JSON"],
        },
    );
}

#[test]
fn in_band_error_event() {
    check_fault(
        "error-event",
        &[],
        Expect {
            kind: "in_band_error",
            status: Some(200),
            error_has: &["simulated in-band error"],
        },
    );
}

#[test]
fn in_band_error_body() {
    check_fault(
        "error-event",
        &["--no-stream"],
        Expect {
            kind: "in_band_error",
            status: Some(200),
            error_has: &["simulated in-band error"],
        },
    );
}

#[test]
fn server_that_never_answers_hits_the_read_timeout() {
    check_fault(
        "hang",
        &["--read-timeout", "1"],
        Expect {
            kind: "read_timeout",
            status: None,
            error_has: &["--read-timeout"],
        },
    );
}

#[test]
fn stream_that_stalls_hits_the_read_timeout() {
    check_fault(
        "stall",
        &["--read-timeout", "1"],
        Expect {
            kind: "read_timeout",
            status: Some(200),
            error_has: &["--read-timeout"],
        },
    );
}

#[test]
fn server_that_never_answers_hits_the_total_timeout() {
    check_fault(
        "hang",
        &["--total-timeout", "1"],
        Expect {
            kind: "timeout",
            status: None,
            error_has: &["total timeout of 1 s exceeded"],
        },
    );
}

#[test]
fn slow_drip_beats_the_read_timeout_but_not_the_total_timeout() {
    check_fault(
        "slow-drip",
        &["--read-timeout", "1", "--total-timeout", "2"],
        Expect {
            kind: "timeout",
            status: Some(200),
            error_has: &["--total-timeout"],
        },
    );
}

#[test]
fn invalid_utf8_in_a_chunk() {
    check_fault(
        "invalid-utf8",
        &[],
        Expect {
            kind: "malformed",
            status: Some(200),
            error_has: &["invalid UTF-8 at byte"],
        },
    );
}

#[test]
fn invalid_utf8_in_a_body() {
    check_fault(
        "invalid-utf8",
        &["--no-stream"],
        Expect {
            kind: "malformed",
            status: Some(200),
            error_has: &["invalid UTF-8 at byte"],
        },
    );
}

#[test]
fn wrong_content_type() {
    check_fault(
        "wrong-content-type",
        &[],
        Expect {
            kind: "bad_response",
            status: Some(200),
            error_has: &["unexpected Content-Type \"text/plain; charset=utf-8\""],
        },
    );
}

/// A stream that ends cleanly without `[DONE]` but carried its usage chunk succeeds, as in evalscope
/// (the end of the body ends the response; latency ends at the last JSON event).
#[test]
fn stream_without_done_but_with_usage_succeeds() {
    let (o, run) = mock_run(6, 2, &["--mock-fault", "no-done"]);
    ok(&o);
    let rows = run.rows();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.success && r.completion_tokens == Some(4)));
    let s = run.summary();
    assert_eq!(s["Failed Requests"], 0);
    assert!(s.get("Failures By Kind").is_none());
}

/// One 10 MiB SSE line parses: the request succeeds and the whole chunk is kept.
#[test]
fn ten_megabyte_line_parses() {
    let (o, run) = mock_run(3, 1, &["--mock-fault", "big-line:3"]);
    ok(&o);
    let db = run.join("benchmark_data.db");
    let rows = rows(&db);
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .all(|r| r.success && r.completion_tokens == Some(4)));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let longest: i64 = conn
        .query_row(
            "SELECT max(length(response_messages)) FROM result",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // base64 of a pickle holding the 10 MiB chunk: at least 4/3 × 10 MiB.
    assert!(longest > 13_000_000, "{longest}");
}
