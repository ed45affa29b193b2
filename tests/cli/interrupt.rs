//! Ctrl-C and SIGTERM: every completed request kept, the summary written and marked, exit 128 + signal.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

fn interrupt_after_rows(signal: i32, expected_code: i32) {
    let sim = timed_sim(5, 5);
    let run = Run::against(&sim).flags(
        "--prompt x --number 100000 --parallel 4 --max-tokens 10 --db-commit-interval 1000000 --no-timestamp --enable-progress-tracker",
    );
    let mut child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until requests are flowing (the simulator has seen some), then signal.
    let t0 = Instant::now();
    while sim.requests().len() < 40 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no traffic");
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::common::signal(&child, signal);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(expected_code));
    let root = run.root();
    let run = run.run_dir("parallel_4_number_100000");
    let rows = run.rows();
    assert!(rows.len() >= 30, "completed requests kept: {}", rows.len());
    let s = run.summary();
    assert_eq!(s["Interrupted"], true);
    assert_eq!(s["Total Requests"].as_u64().unwrap() as usize, rows.len());
    assert!(root.join("performance_summary.txt").is_file());
    let html = std::fs::read_to_string(root.join("perf_report.html")).unwrap();
    assert!(
        html.contains(r#"role="alert">Interrupted"#),
        "HTML report marked"
    );
    let progress = json_file(&root.join("progress.json"));
    assert_eq!(progress["status"], "error");
    assert_eq!(progress["interrupted"], true);
    assert_eq!(
        progress["processed_count"].as_u64().unwrap() as usize,
        rows.len()
    );
}

#[test]
fn sigint_keeps_every_completed_request() {
    interrupt_after_rows(libc::SIGINT, 130);
}

#[test]
fn sigterm_exits_143() {
    interrupt_after_rows(libc::SIGTERM, 143);
}
