//! Faults in combination, through the CLI: several rules in one run, the per-request triggers (header and
//! body field), a 400 in the connection test, and a server killed and restarted mid-run.

use crate::common::*;
use crate::faults::{kind_rows, mock_run, KindRow};

/// Several faults at once: the first matching rule wins; every count is exact.
#[test]
fn mixed_faults_are_counted_exactly_by_kind() {
    let (o, run) = mock_run(
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
    let rows = kind_rows(&run.db());
    assert_eq!(rows.len(), 60);
    let mut got = std::collections::BTreeMap::new();
    for r in rows.iter().filter(|r| !r.0) {
        *got.entry(r.1.clone().unwrap()).or_insert(0u64) += 1;
    }
    assert_eq!(got, expected);
    let s = run.summary();
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
    let run = Run::new()
        .flags("--api mock --model m --prompt x --number 2 --mock-fault http-400:1 --no-timestamp");
    let err = run.fails(1);
    assert!(
        err.contains("Test connection failed") && err.contains("simulated fault http-400"),
        "{err}"
    );
}

/// The server is killed mid-run and restarted on the same port: requests in flight fail as disconnects
/// or resets, requests sent while it is down fail as `connect` (refused), and the run goes on to the end.
#[test]
fn connection_refused_while_the_server_is_down() {
    use std::time::{Duration, Instant};
    let mut sim = timed_sim(1, 1);
    // Paced on an absolute timeline (--rate), so refused requests (which fail in microseconds) cannot use
    // up the run while the server is down, however the machine is loaded.
    let run = Run::at(&sim, "/v1/chat/completions").flags(
        "--prompt x --number 600 --parallel 4 --rate 400 --seed 1 --max-tokens 4 --no-test-connection --no-timestamp",
    );
    let mut command = run.command();
    let child = std::thread::spawn(move || command.output().expect("llmperf runs"));
    let t0 = Instant::now();
    while sim.requests().len() < 100 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no traffic");
        std::thread::sleep(Duration::from_millis(5));
    }
    sim.kill();
    std::thread::sleep(Duration::from_millis(300));
    sim.revive().unwrap();
    let o = child.join().unwrap();
    ok(&o);
    let run = run.run_dir("parallel_4_number_600");
    let rows = kind_rows(&run.db());
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
    eprintln!("refused: {}, succeeded: {ok_rows}", connect.len());
    assert!(
        ok_rows > 150,
        "the run went on after the restart: {ok_rows}"
    );
    let s = run.summary();
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
        let (o, run) = mock_run(4, 2, &extra);
        // Every request faulted: exit 4.
        assert_eq!(
            o.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rows = kind_rows(&run.db());
        assert_eq!(rows.len(), 4);
        assert!(
            rows.iter().all(|r| !r.0 && r.1.as_deref() == Some(kind)),
            "{rows:?}"
        );
    }
}
