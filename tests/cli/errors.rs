//! Failures: bad flags (exit 2, the flag named, nothing written), failed requests kept with their error,
//! the connection test, existing databases.

use crate::common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2_name_the_flag_and_write_nothing() {
    let out = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--prompt", "x"], "--model"),
        (
            &["--model", "m", "--prompt", "x", "--parallel", "1", "2"],
            "--parallel",
        ),
        (
            &[
                "--model",
                "m",
                "--prompt",
                "x",
                "--open-loop",
                "--rate",
                "0",
            ],
            "--rate",
        ),
        (
            &["--model", "m", "--prompt", "x", "--max-tokens", "9", "3"],
            "--max-tokens",
        ),
        (
            &["--model", "m", "--prompt", "x", "--api", "bogus"],
            "--api",
        ),
        (
            &["--model", "m", "--dataset", "line_by_line"],
            "--dataset-path",
        ),
        (
            &["--model", "m", "--prompt", "x", "--extra-args", "{nope"],
            "--extra-args",
        ),
        (
            &["--model", "m", "--prompt", "x", "--headers", "novalue"],
            "--headers",
        ),
        (
            &["--model", "m", "--prompt", "@/nonexistent/file"],
            "--prompt",
        ),
    ];
    for (args, flag) in cases {
        let o = llmperf(out.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "no output folder for usage errors"
    );
}

#[test]
fn empty_dataset_is_a_usage_error() {
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("empty.txt");
    std::fs::write(&data, "\n\n").unwrap();
    let o = llmperf(
        out.path().join("o").as_path(),
        &[
            "--model",
            "m",
            "--dataset",
            "custom",
            "--dataset-path",
            data.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Dataset is empty"), "{}", stderr(&o));
}

#[test]
fn unreachable_server_records_failures_with_their_error() {
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tempfile::tempdir().unwrap();
    ok(&llmperf(
        out.path(),
        &[
            "--url",
            &format!("http://127.0.0.1:{port}/v1/chat/completions"),
            "--model",
            "m",
            "--prompt",
            "x",
            "--number",
            "3",
            "--no-test-connection",
        ],
    ));
    let run = run_root(out.path(), "m").join("parallel_1_number_3");
    let rows = rows(&run.join("benchmark_data.db"));
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
    let s = json_file(&run.join("benchmark_summary.json"));
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
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("bodies.txt");
    std::fs::write(
        &data,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"stream_options\": {\"include_usage\": false}}\nplain prompt\n",
    )
    .unwrap();
    ok(&llmperf(
        out.path().join("o").as_path(),
        &[
            "--url",
            &format!("{}/v1", sim.base_url()),
            "--model",
            "m",
            "--dataset",
            "line_by_line",
            "--dataset-path",
            data.to_str().unwrap(),
            "--number",
            "4",
            "--max-tokens",
            "3",
            "--no-test-connection",
        ],
    ));
    let run = run_root(&out.path().join("o"), "m").join("parallel_1_number_4");
    let rows = rows(&run.join("benchmark_data.db"));
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
    let out = tempfile::tempdir().unwrap();
    let o = llmperf(
        out.path(),
        &[
            "--url",
            &format!("{}/v1/nowhere/chat/completions", sim.base_url()),
            "--model",
            "m",
            "--prompt",
            "x",
            "--number",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Test connection failed") && stderr(&o).contains("404"),
        "{}",
        stderr(&o)
    );
    assert_eq!(sim.requests().len(), 1, "a 4xx is not retried");
}

#[test]
fn an_existing_database_is_never_overwritten() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let args = [
        "--url",
        &format!("{}/v1", sim.base_url()),
        "--model",
        "m",
        "--prompt",
        "x",
        "--number",
        "2",
        "--no-timestamp",
    ];
    ok(&llmperf(out.path(), &args));
    let db = out.path().join("m/parallel_1_number_2/benchmark_data.db");
    let before = std::fs::read(&db).unwrap();
    let o = llmperf(out.path(), &args);
    // A usage error (exit 2), found before the dataset loads or anything is written.
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
