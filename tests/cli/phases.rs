//! Connection phases (docs/phases.md) through the CLI: the `phase_*` columns of the stored rows over TLS
//! (a connection's first request carries dns/connect/tls, later ones on it none) and plain HTTP (never a
//! TLS phase), the phases in order and ending before the first chunk, the summary keys recomputed from the
//! rows (mean, and p99 by evalscope's nearest rank), and the `Connection Phases` tables of the text and
//! HTML reports.

use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::common::tls::{counting_tls_terminator, tls_fixture};
use crate::common::*;

/// The phase columns, in order, and the names the summary keys give them.
const PHASES: [(&str, &str); 6] = [
    ("phase_dns", "DNS"),
    ("phase_connect", "Connect"),
    ("phase_tls", "TLS"),
    ("phase_write", "Write"),
    ("phase_headers", "Headers"),
    ("phase_first_byte", "First Byte"),
];

/// One stored row's phases (seconds, `None` for NULL) and its `first_chunk_latency`.
pub(crate) struct PhaseRow {
    pub phases: [Option<f64>; 6],
    pub ttft: Option<f64>,
    pub success: bool,
}

/// Every row's phases, in storage order.
pub(crate) fn phase_rows(db: &Path) -> Vec<PhaseRow> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let cols: Vec<&str> = PHASES.iter().map(|(c, _)| *c).collect();
    let sql = format!(
        "SELECT {}, first_chunk_latency, success FROM result ORDER BY rowid",
        cols.join(", ")
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            let mut phases = [None; 6];
            for (i, p) in phases.iter_mut().enumerate() {
                *p = r.get(i)?;
            }
            Ok(PhaseRow {
                phases,
                ttft: r.get(6)?,
                success: r.get::<_, i64>(7)? == 1,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// Every phase is >= 0, and laid end to end they end before the first chunk (TTFT; the latency for a
/// non-stream response), up to the stored values' rounding.
pub(crate) fn assert_in_order_before_ttft(rows: &[PhaseRow]) {
    for (i, r) in rows.iter().enumerate() {
        assert!(r.success, "row {i}");
        assert!(
            r.phases.iter().flatten().all(|&d| d >= 0.0),
            "row {i}: {:?}",
            r.phases
        );
        let sum: f64 = r.phases.iter().flatten().sum();
        let ttft = r.ttft.expect("a successful row has a TTFT");
        assert!(
            sum <= ttft + 1e-9,
            "row {i}: phases {:?} sum {sum} > TTFT {ttft}",
            r.phases
        );
        assert!(r.phases[3].is_some() && r.phases[4].is_some() && r.phases[5].is_some());
    }
}

/// evalscope's nearest-rank percentile of ascending `v` (`ceil(n p / 100) - 1`).
fn p99(v: &[f64]) -> f64 {
    let rank = ((v.len() as f64) * 0.99).ceil() as usize;
    v[rank.saturating_sub(1)]
}

/// The summary's phase keys equal the mean and p99 recomputed from the rows, in ms; a phase no row had has
/// no keys; `New Connections` counts the rows that opened one; the keys come after the load verdict's.
fn assert_summary_recounts(s: &Value, rows: &[PhaseRow]) {
    for (i, (_, label)) in PHASES.iter().enumerate() {
        let mut v: Vec<f64> = rows.iter().filter_map(|r| r.phases[i]).collect();
        let (mean_key, p99_key) = (
            format!("Phase {label} Mean (ms)"),
            format!("Phase {label} P99 (ms)"),
        );
        if v.is_empty() {
            assert!(
                s.get(&mean_key).is_none() && s.get(&p99_key).is_none(),
                "{s}"
            );
            continue;
        }
        v.sort_by(f64::total_cmp);
        let mean_ms = v.iter().sum::<f64>() / v.len() as f64 * 1e3;
        let got = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k}: {s}"));
        assert!(
            (got(&mean_key) - py_round(mean_ms, 4)).abs() < 1e-9,
            "{mean_key}: {s}"
        );
        assert!(
            (got(&p99_key) - py_round(p99(&v) * 1e3, 4)).abs() < 1e-9,
            "{p99_key}: {s}"
        );
    }
    let new = rows.iter().filter(|r| r.phases[1].is_some()).count();
    assert_eq!(s["New Connections"], new, "{s}");
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    let at = |k: &str| {
        keys.iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert!(at("New Connections") > at("Load As Configured"), "{keys:?}");
    assert!(at("New Connections") > at("Client Limited"));
}

/// Two streams of four requests each through the TLS terminator at `addr`, with `extra` flags.
fn tls_run(addr: std::net::SocketAddr, extra: &str) -> Run {
    Run::with_url(&format!(
        "https://localhost:{}/v1/chat/completions",
        addr.port()
    ))
    .flags("--prompt x --parallel 2 --number 8 --stream --max-tokens 4")
    .flags(extra)
    .env("SSL_CERT_FILE", tls_fixture("", "ca.pem"))
}

#[test]
fn over_tls_a_connections_first_request_carries_its_handshakes() {
    let sim = timed_sim(20, 2);
    let (addr, _rt, handshakes) = counting_tls_terminator(&tls_fixture("", ""), sim.addr());
    let run = tls_run(addr, "--no-test-connection");
    let dir = run.ok_dir("parallel_2_number_8");
    let rows = phase_rows(&dir.db());
    assert_eq!(rows.len(), 8);
    assert_in_order_before_ttft(&rows);
    let opened: Vec<&PhaseRow> = rows.iter().filter(|r| r.phases[1].is_some()).collect();
    // Every connection the client opened is one TLS handshake at the terminator, and one stored row.
    assert_eq!(opened.len(), handshakes.load(Ordering::SeqCst));
    assert_eq!(opened.len(), 2, "--parallel 2 on kept-alive connections");
    for r in &opened {
        let [dns, connect, tls, ..] = r.phases;
        assert!(dns.is_some_and(|d| d >= 0.0));
        assert!(
            connect.unwrap() > 0.0 && tls.unwrap() > 0.0,
            "{:?}",
            r.phases
        );
    }
    for r in rows.iter().filter(|r| r.phases[1].is_none()) {
        assert_eq!(r.phases[..3], [None, None, None], "a reused connection");
    }
    let s = dir.summary();
    assert_summary_recounts(&s, &rows);
    let report = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(
        report.contains("Connection Phases (ms, mean / p99)"),
        "{report}"
    );
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    assert!(html.contains(r#"<section id="phases"><h2>Connection phases</h2>"#));

    // With the connection test (a client of its own, as evalscope's): one more handshake, and the run's
    // own connections are all new ones, each carried by a stored row and counted in New Connections.
    let before = handshakes.load(Ordering::SeqCst);
    let run = tls_run(addr, "");
    let dir = run.ok_dir("parallel_2_number_8");
    let rows = phase_rows(&dir.db());
    let opened = rows.iter().filter(|r| r.phases[1].is_some()).count();
    assert_eq!(opened, 2, "both of the run's connections are new");
    assert_eq!(handshakes.load(Ordering::SeqCst) - before, opened + 1);
    assert_eq!(dir.summary()["New Connections"], 2);
}

#[test]
fn plain_http_has_no_tls_phase_and_non_stream_ends_before_the_latency() {
    let sim = timed_sim(10, 1);
    let run = Run::against(&sim)
        .flags("--prompt x --parallel 2 --number 6 --max-tokens 2 --no-test-connection");
    run.ok();
    let dir = run.single_run();
    let rows = phase_rows(&dir.db());
    assert_eq!(rows.len(), 6);
    assert!(
        rows.iter().all(|r| r.phases[2].is_none()),
        "no TLS phase over http://"
    );
    assert_in_order_before_ttft(&rows);
    let opened = rows.iter().filter(|r| r.phases[1].is_some()).count();
    assert!(
        (1..=2).contains(&opened),
        "at most one connection per worker: {opened}"
    );
    let s = dir.summary();
    assert_summary_recounts(&s, &rows);
    assert!(s.get("Phase TLS Mean (ms)").is_none());
}

#[test]
fn an_open_loops_requests_written_before_their_task_ran_keep_their_phases_in_order() {
    // The open loop writes a request on an idle connection from its timer thread; the task that reads the
    // answer runs later. Its write is stamped where it happened, so the phases still end before TTFT.
    let sim = timed_sim(5, 1);
    let run = Run::against(&sim)
        .flags("--prompt x --open-loop --rate 100 --number 40 --max-tokens 2 --stream --seed 3")
        .flags("--no-test-connection");
    run.ok();
    let rows = phase_rows(&run.single_run().db());
    assert_eq!(rows.len(), 40);
    assert_in_order_before_ttft(&rows);
    let opened = rows.iter().filter(|r| r.phases[1].is_some()).count();
    assert!(
        opened >= 1 && opened < rows.len(),
        "connections were reused: {opened}"
    );
}
