//! `--metrics-listen`: llmperf's own Prometheus endpoint during a run, read by the test (counts move while
//! the run goes on, the final counts equal the database's rows, `promtool check metrics` accepts the
//! text) and by a real Prometheus (Debian's `prometheus`, on loopback with a generated configuration),
//! whose query API must return the run's request count. Without Prometheus (scripts/setup_test_deps.sh
//! installs it) those checks are skipped with a note, except under `CI=true`, where they fail.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on `addr`: the status line's code and the body; `None` when nothing answers.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.get(9..12)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((code, dechunk(&body, &text)))
}

/// The body of a response that may be chunked.
fn dechunk(body: &str, whole: &str) -> String {
    if !whole
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

/// The value of the one sample `name{labels…}` whose line starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

const LABELS: &str = r#"{run="demo",point="parallel_4_number_300",shard=""}"#;

fn mock_run(port: u16, linger_s: u32) -> Run {
    Run::new()
        .flags(
            "--api mock --model demo --prompt hello --parallel 4 --number 300 --max-tokens 8 \
             --mock-ttft-ms 15 --mock-itl-ms 3 --mock-fault http-500:25 --no-timestamp",
        )
        .flag("--metrics-listen", port.to_string())
        .flag("--metrics-linger-s", linger_s.to_string())
}

fn require(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and {tool} is missing: run scripts/setup_test_deps.sh"
    );
    eprintln!("note: skipping the {tool} part: not installed here (scripts/setup_test_deps.sh installs it)");
    false
}

#[test]
fn the_endpoint_counts_the_run_live_and_ends_at_the_database_row_count() {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let run = mock_run(port, 3);
    let mut child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let completed = format!("llmperf_requests_completed_total{LABELS}");
    let (mut seen, mut in_flight_max, mut last) = (Vec::new(), 0.0f64, String::new());
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no final scrape; last:\n{last}"
        );
        if let Some((200, text)) = get(addr, "/metrics") {
            if let Some(v) = sample(&text, &completed) {
                seen.push(v);
            }
            let in_flight = format!("llmperf_requests_in_flight{LABELS}");
            in_flight_max = in_flight_max.max(sample(&text, &in_flight).unwrap_or(0.0));
            let finished = sample(&text, r#"llmperf_sweep_finished{run="demo",shard=""}"#);
            last = text;
            if finished == Some(1.0) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let dir = run.run_dir("parallel_4_number_300");
    let rows = dir.rows();
    assert_eq!(rows.len(), 300);
    let ok = rows.iter().filter(|r| r.success).count() as f64;
    assert_eq!(sample(&last, &completed), Some(300.0), "{last}");
    assert_eq!(
        sample(&last, &format!("llmperf_requests_succeeded_total{LABELS}")),
        Some(ok)
    );
    let failed = r#"llmperf_requests_failed_total{run="demo",point="parallel_4_number_300",shard="",kind="http_status"}"#;
    assert_eq!(sample(&last, failed), Some(300.0 - ok));
    assert!(300.0 - ok >= 10.0, "the faults reached the rows");
    let ttft_count = format!("llmperf_time_to_first_token_seconds_count{LABELS}");
    assert_eq!(sample(&last, &ttft_count), Some(ok));
    let out_tokens: i64 = rows
        .iter()
        .filter(|r| r.success)
        .map(|r| r.completion_tokens.unwrap())
        .sum();
    assert_eq!(
        sample(&last, &format!("llmperf_output_tokens_total{LABELS}")),
        Some(out_tokens as f64)
    );
    assert!(
        seen.iter().any(|&v| v > 0.0 && v < 300.0),
        "a scrape saw the run in progress: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]),
        "a counter never goes down: {seen:?}"
    );
    // Started and not yet counted by the aggregator: the 4 slots, plus records waiting in its channel.
    assert!(
        (1.0..=4.0 + 64.0).contains(&in_flight_max),
        "in flight {in_flight_max}"
    );
    assert_eq!(
        sample(&last, &format!("llmperf_target_concurrency{LABELS}")),
        Some(4.0)
    );
    if require("promtool") {
        let mut check = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check
            .stdin
            .take()
            .unwrap()
            .write_all(last.as_bytes())
            .unwrap();
        let out = check.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool check metrics:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_taken_port_or_a_linger_without_endpoint_is_a_usage_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let run = Run::new()
        .flags("--api mock --model demo --prompt hi --number 2")
        .flag("--metrics-listen", port.to_string());
    let err = run.fails(2);
    assert!(
        err.contains(&format!("--metrics-listen 127.0.0.1:{port}: cannot listen")),
        "{err}"
    );
    assert_eq!(run.out_entries(), 0, "nothing written");
    let run =
        Run::new().flags("--api mock --model demo --prompt hi --number 2 --metrics-linger-s 3");
    assert!(run
        .fails(2)
        .contains("--metrics-linger-s applies only with --metrics-listen"));
}

/// A Prometheus server of the test's own, killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target_port: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: llmperf\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let t0 = Instant::now();
        while get(p.addr, "/-/ready").map(|r| r.0) != Some(200) {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "Prometheus never became ready"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The value of the instant query `promql` (one series), `None` while it has none.
    fn query(&self, promql: &str) -> Option<f64> {
        let mut q = String::new();
        for b in promql.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => q.push(b as char),
                _ => q.push_str(&format!("%{b:02X}")),
            }
        }
        let (code, body) = get(self.addr, &format!("/api/v1/query?query={q}"))?;
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let result = v["data"]["result"].as_array()?.first()?.clone();
        result["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_the_run_and_counts_its_rows() {
    if !require("prometheus") {
        return;
    }
    let port = free_port();
    let prometheus = Prometheus::start(port);
    let run = mock_run(port, 6);
    run.ok();
    let rows = run.run_dir("parallel_4_number_300").rows().len() as f64;
    // The target is gone now (its series went stale): read the last values seen over the window.
    let t0 = Instant::now();
    while prometheus.query(r#"max(max_over_time(llmperf_sweep_finished{run="demo"}[10m]))"#)
        != Some(1.0)
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped the finished run"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let counted = prometheus
        .query(r#"sum(max_over_time(llmperf_requests_completed_total{run="demo"}[10m]))"#)
        .expect("the request count");
    assert_eq!(
        counted, rows,
        "Prometheus' count equals the database's rows"
    );
    let by_outcome = prometheus
        .query(r#"sum(max_over_time(llmperf_requests_succeeded_total{run="demo"}[10m])) + sum(max_over_time(llmperf_requests_failed_total{run="demo"}[10m]))"#)
        .expect("succeeded + failed");
    assert_eq!(by_outcome, rows);
}
