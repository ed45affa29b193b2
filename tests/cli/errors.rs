//! Failures: bad flags (exit 2, the flag named, nothing written), failed requests kept with their error,
//! runs in which nothing succeeded (exit 4, the first error of each kind shown), the connection test,
//! existing databases.

use crate::common::*;

#[test]
fn usage_errors_exit_2_name_the_flag_and_write_nothing() {
    let cases = [
        ("--prompt x", "--model"),
        ("--model m --prompt x --parallel 1 2", "--parallel"),
        ("--model m --prompt x --open-loop --rate 0", "--rate"),
        ("--model m --prompt x --max-tokens 9 3", "--max-tokens"),
        ("--model m --prompt x --api bogus", "--api"),
        ("--model m --dataset line_by_line", "--dataset-path"),
        ("--model m --prompt x --extra-args {nope", "--extra-args"),
        ("--model m --prompt x --headers novalue", "--headers"),
        ("--model m --prompt @/nonexistent/file", "--prompt"),
    ];
    for (args, flag) in cases {
        let run = Run::new().flags(args);
        let err = run.fails(2);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert_eq!(
            run.out_entries(),
            0,
            "{args:?}: no output folder for usage errors"
        );
    }
}

#[test]
fn empty_dataset_is_a_usage_error() {
    let run = Run::new().flags("--model m --dataset custom");
    let data = run.file("empty.txt", "\n\n");
    let err = run.flag("--dataset-path", &data).fails(2);
    assert!(err.contains("Dataset is empty"), "{err}");
}

#[test]
fn unreachable_server_records_failures_with_their_error() {
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = Run::with_url(&format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .flags("--prompt x --number 3 --no-test-connection");
    // No request of the invocation succeeded: exit 4, with the files written.
    run.fails(4);
    let run = run.run_dir("parallel_1_number_3");
    let rows = run.rows();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(!r.success);
        assert!(r.latency.is_none() && r.ttft.is_none() && r.prompt_tokens.is_none());
        assert!(
            r.error
                .as_deref()
                .unwrap_or("")
                .to_lowercase()
                .contains("connect"),
            "{:?}",
            r.error
        );
        assert!(r.completed_time >= r.start_time);
    }
    let s = run.summary();
    assert_eq!(s["Failed Requests"], 3);
    assert_eq!(s["Avg Latency (s)"], -1.0);
    assert_eq!(s["Req Throughput (req/s)"], 0.0);
    assert_eq!(s["Failures By Kind"]["connect"], 3);
    assert_eq!(
        s["Stream Requests"], 3,
        "failures count as stream requests when the body asked to stream"
    );
}

#[test]
fn response_without_usage_is_a_failed_request_not_an_aborted_run() {
    let sim = fast_sim();
    let run = Run::against(&sim);
    let data = run.file(
        "bodies.txt",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream_options\": {\"include_usage\": false}}\nplain prompt\n",
    );
    let run = run
        .flags("--dataset line_by_line --number 4 --max-tokens 3 --no-test-connection")
        .flag("--dataset-path", &data);
    run.ok();
    let rows = run.run_dir("parallel_1_number_4").rows();
    let failed: Vec<_> = rows.iter().filter(|r| !r.success).collect();
    assert_eq!(failed.len(), 2);
    assert!(failed
        .iter()
        .all(|r| r.error.as_deref().unwrap().contains("usage")));
    assert_eq!(rows.iter().filter(|r| r.success).count(), 2);
}

#[test]
fn connection_test_4xx_aborts_with_the_server_message() {
    let sim = fast_sim();
    let err = Run::at(&sim, "/v1/nowhere/chat/completions")
        .flags("--prompt x --number 2")
        .fails(1);
    assert!(
        err.contains("Test connection failed") && err.contains("404"),
        "{err}"
    );
    assert_eq!(sim.requests().len(), 1, "a 4xx is not retried");
}

#[test]
fn an_existing_database_is_never_overwritten() {
    let sim = fast_sim();
    let run = Run::against(&sim).flags("--prompt x --number 2 --no-timestamp");
    run.ok();
    let db = run.out().join("m/parallel_1_number_2/benchmark_data.db");
    let before = std::fs::read(&db).unwrap();
    let err = run.fails(2);
    // A usage error (exit 2), found before the dataset loads or anything is written.
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn a_sweep_where_no_request_succeeds_exits_4_and_shows_the_first_error_of_each_kind() {
    let run = Run::new().flags(
        "--api mock --model m --prompt x --parallel 1 2 --number 2 4 --no-test-connection --mock-fault http-500",
    );
    let output = run.output();
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(4), "stderr:\n{err}");
    let body = r#"{"error":{"message":"simulated fault http-500 (request 1)""#;
    // The console: one ERROR line per run that had no success, the first error under its summary table,
    // and the verdict.
    for (run_name, n) in [("parallel_1_number_2", 2), ("parallel_2_number_4", 4)] {
        let line = format!(
            "ERROR: Run {run_name}: none of its {n} requests succeeded ({n} http_status); first http_status error: HTTP 500 Internal Server Error: "
        );
        assert!(err.contains(&line), "{line}\n{err}");
    }
    assert!(
        err.contains(&format!(
            "First http_status error: HTTP 500 Internal Server Error: {body}"
        )),
        "{err}"
    );
    assert!(
        err.contains("ERROR: no request succeeded: all 6 measured requests of 2 run(s) failed"),
        "{err}"
    );
    // performance_summary.txt (also printed): the first error per run under the Failures table.
    let text = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(out.contains(text.trim_end()), "the report is printed");
    assert!(
        text.contains(&format!(
            "! Run conc 1: first http_status error: HTTP 500 Internal Server Error: {body}"
        )),
        "{text}"
    );
    // The HTML report: the first errors in the Failures section, no evalscope sentinels as values.
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    let failures = &html[html.find(r#"<section id="failures">"#).unwrap()..];
    let failures = &failures[..failures.find("</section>").unwrap()];
    assert!(failures.contains("First error"), "{failures}");
    assert!(
        failures.contains("HTTP 500 Internal Server Error: {&quot;error&quot;:{&quot;message&quot;:&quot;simulated fault http-500 (request 1)"),
        "{failures}"
    );
    let overview = &html[html.find(r#"<section id="overview">"#).unwrap()..];
    let overview = &overview[..overview.find("</section>").unwrap()];
    assert!(
        !overview.contains("-1000") && !overview.contains(">-1<"),
        "{overview}"
    );
    assert!(overview.contains("<td>–</td>"), "{overview}");
    // The run's own files are written as for any run.
    let s = run.run_dir("parallel_2_number_4").summary();
    assert_eq!(s["Failed Requests"], 4);
    assert_eq!(
        s["Avg TTFT (ms)"], -1000.0,
        "evalscope's sentinel stays in the JSON"
    );
}

#[test]
fn a_sweep_in_which_one_run_succeeds_exits_0_and_flags_the_failed_run() {
    // Every 2nd request fails: run 1 sends request 1 (succeeds), run 2 sends request 2 (fails).
    let run = Run::new().flags(
        "--api mock --model m --prompt x --parallel 1 2 --number 1 1 --no-test-connection --mock-fault http-503:2",
    );
    let output = run.output();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{err}");
    assert!(
        err.contains("ERROR: Run parallel_2_number_1: none of its 1 requests succeeded (1 http_status); first http_status error: HTTP 503 Service Unavailable (Retry-After: 1): "),
        "{err}"
    );
    assert!(!err.contains("ERROR: Run parallel_1_number_1"), "{err}");
    assert!(!err.contains("no request succeeded"), "{err}");
}

#[test]
fn an_unreachable_url_says_how_long_it_retries_which_flag_bounds_it_and_that_ctrl_c_stops_it() {
    use std::io::{BufRead, BufReader};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = Run::with_url(&format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .flags("--prompt x --number 1");
    let mut child = run
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first failed attempt is reported at once (the next is 10 s later): read up to it, then stop.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines
        .by_ref()
        .map(|l| l.unwrap())
        .find(|l| l.contains("Test connection failed"))
        .expect("the first failed attempt is logged");
    signal(&child, libc::SIGINT);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{rest:?}");
    assert!(
        first.ends_with(
            "retrying every 10 s for up to 6 h (--total-timeout 21600 s bounds it); press Ctrl-C to stop"
        ),
        "{first}"
    );
}
