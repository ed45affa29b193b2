//! The fault matrix, through the CLI: `--api mock --mock-fault KIND:EVERY` makes every EVERY-th request
//! misbehave; each faulted request must be a failed row with its kind, status and error text (or a success
//! where evalscope's semantics say so), the run must go on, and the counts must be exact in the database,
//! `benchmark_summary.json`, the console table and `performance_summary.txt`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

/// One failed or succeeded row: (success, failure_kind, status_code, error).
type KindRow = (bool, Option<String>, Option<i64>, Option<String>);

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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `--api mock` with 1 ms timings, `number` requests at `parallel`, plus `extra`; returns the output
/// and the run folder.
fn mock_run(out: &Path, number: u64, parallel: u64, extra: &[&str]) -> (Output, PathBuf) {
    let n = number.to_string();
    let p = parallel.to_string();
    let mut args = vec![
        "--api",
        "mock",
        "--model",
        "m",
        "--prompt",
        "one two",
        "--number",
        &n,
        "--parallel",
        &p,
        "--max-tokens",
        "4",
        "--mock-ttft-ms",
        "1",
        "--mock-itl-ms",
        "1",
        "--no-test-connection",
        "--no-timestamp",
    ];
    args.extend_from_slice(extra);
    let o = llmperf(out, &args);
    let run = out.join(format!("m/parallel_{parallel}_number_{number}"));
    (o, run)
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
    let out = tempfile::tempdir().unwrap();
    let rule = format!("{fault}:3");
    let mut args = vec!["--mock-fault", &rule];
    args.extend_from_slice(extra);
    let (o, run) = mock_run(out.path(), 9, 3, &args);
    let stdout = ok(&o);
    let rows = kind_rows(&run.join("benchmark_data.db"));
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
    let s = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(s["Total Requests"], 9);
    assert_eq!(s["Success Requests"], 6);
    assert_eq!(s["Failed Requests"], 3);
    assert_eq!(s["Failures By Kind"], serde_json::json!({ expect.kind: 3 }));
    let console = stderr(&o);
    assert!(
        console.contains(&format!("Failures ({})", expect.kind)),
        "{fault}: console table: {console}"
    );
    let report = std::fs::read_to_string(out.path().join("m/performance_summary.txt")).unwrap();
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
    let out = tempfile::tempdir().unwrap();
    let (o, run) = mock_run(out.path(), 6, 2, &["--mock-fault", "no-done"]);
    ok(&o);
    let rows = rows(&run.join("benchmark_data.db"));
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.success && r.completion_tokens == Some(4)));
    let s = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(s["Failed Requests"], 0);
    assert!(s.get("Failures By Kind").is_none());
}

/// One 10 MiB SSE line parses: the request succeeds and the whole chunk is kept.
#[test]
fn ten_megabyte_line_parses() {
    let out = tempfile::tempdir().unwrap();
    let (o, run) = mock_run(out.path(), 3, 1, &["--mock-fault", "big-line:3"]);
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

/// Several faults at once: the first matching rule wins; every count is exact.
#[test]
fn mixed_faults_are_counted_exactly_by_kind() {
    let out = tempfile::tempdir().unwrap();
    let (o, run) = mock_run(
        out.path(),
        60,
        4,
        &[
            "--mock-fault",
            "http-503:5",
            "reset:7",
            "malformed:11",
            "error-event:13",
        ],
    );
    ok(&o);
    let mut expected = std::collections::BTreeMap::new();
    for id in 1..=60u64 {
        let kind = [
            (5, "http_status"),
            (7, "reset"),
            (11, "malformed"),
            (13, "in_band_error"),
        ]
        .into_iter()
        .find(|(every, _)| id % every == 0)
        .map(|(_, k)| k);
        if let Some(k) = kind {
            *expected.entry(k.to_string()).or_insert(0u64) += 1;
        }
    }
    let failures: u64 = expected.values().sum();
    let rows = kind_rows(&run.join("benchmark_data.db"));
    assert_eq!(rows.len(), 60);
    let mut got = std::collections::BTreeMap::new();
    for r in rows.iter().filter(|r| !r.0) {
        *got.entry(r.1.clone().unwrap()).or_insert(0u64) += 1;
    }
    assert_eq!(got, expected);
    let s = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(s["Failed Requests"].as_u64(), Some(failures));
    assert_eq!(s["Success Requests"].as_u64(), Some(60 - failures));
    assert_eq!(
        s["Failures By Kind"],
        serde_json::to_value(&expected).unwrap()
    );
}

/// A 400 in the connection test aborts the run with the server's message.
#[test]
fn connection_test_400_aborts_with_the_server_message() {
    let out = tempfile::tempdir().unwrap();
    let o = llmperf(
        out.path(),
        &[
            "--api",
            "mock",
            "--model",
            "m",
            "--prompt",
            "x",
            "--number",
            "2",
            "--mock-fault",
            "http-400:1",
            "--no-timestamp",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("Test connection failed") && err.contains("simulated fault http-400"),
        "{err}"
    );
}

/// The server is killed mid-run and restarted on the same port: requests in flight fail as disconnects
/// or resets, requests sent while it is down fail as `connect` (refused), and the run goes on to the end.
#[test]
fn connection_refused_while_the_server_is_down() {
    use llmperf::sim::{SimConfig, SimServer};
    use std::time::{Duration, Instant};
    let mut sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        ..SimConfig::default()
    })
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let dir = out.path().to_path_buf();
    let child = std::thread::spawn(move || {
        llmperf(
            &dir,
            &[
                "--url",
                &url,
                "--model",
                "m",
                "--prompt",
                "x",
                "--number",
                "600",
                "--parallel",
                "2",
                "--max-tokens",
                "4",
                "--no-test-connection",
                "--no-timestamp",
            ],
        )
    });
    let t0 = Instant::now();
    while sim.requests().len() < 40 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no traffic");
        std::thread::sleep(Duration::from_millis(5));
    }
    sim.kill();
    std::thread::sleep(Duration::from_millis(30));
    sim.revive().unwrap();
    let o = child.join().unwrap();
    ok(&o);
    let run = out.path().join("m/parallel_2_number_600");
    let rows = kind_rows(&run.join("benchmark_data.db"));
    assert_eq!(rows.len(), 600, "every request stored");
    let connect: Vec<&KindRow> = rows
        .iter()
        .filter(|r| r.1.as_deref() == Some("connect"))
        .collect();
    assert!(!connect.is_empty(), "some requests were refused");
    for r in &connect {
        assert_eq!(r.2, None, "no status without a connection");
        let e = r.3.as_deref().unwrap().to_lowercase();
        assert!(e.contains("refused") || e.contains("connect"), "{e}");
    }
    for r in rows.iter().filter(|r| !r.0) {
        assert!(
            matches!(r.1.as_deref(), Some("connect" | "disconnect" | "reset")),
            "{r:?}"
        );
    }
    let ok_rows = rows.iter().filter(|r| r.0).count();
    assert!(ok_rows > 40, "the run went on after the restart: {ok_rows}");
    let s = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(s["Total Requests"], 600);
    assert_eq!(s["Success Requests"].as_u64(), Some(ok_rows as u64));
    let by_kind: u64 = s["Failures By Kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, 600 - ok_rows as u64);
    // The server saw exactly the requests that succeeded, plus those cut off when it died.
    let full = sim
        .truth()
        .iter()
        .filter(|t| t.completion_tokens == 4)
        .count();
    assert!(
        full >= ok_rows,
        "{full} complete streams, {ok_rows} successes"
    );
}

/// The per-request triggers: a header (`--headers x-llmperf-fault=KIND`) and a body field
/// (`--extra-args '{"llmperf_fault": "KIND"}'`) fault every request they are sent with.
#[test]
fn header_and_body_field_triggers() {
    for (extra, kind) in [
        (["--headers", "x-llmperf-fault=http-429"], "http_status"),
        (["--extra-args", r#"{"llmperf_fault": "reset"}"#], "reset"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let (o, run) = mock_run(out.path(), 4, 2, &extra);
        ok(&o);
        let rows = kind_rows(&run.join("benchmark_data.db"));
        assert_eq!(rows.len(), 4);
        assert!(
            rows.iter().all(|r| !r.0 && r.1.as_deref() == Some(kind)),
            "{rows:?}"
        );
    }
}
