//! The plateau window (docs/load-verdict.md) through the CLI against the simulator: the `Plateau …` keys
//! of `benchmark_summary.json` recounted by SQL over the `result` table within the reported window
//! (closed loop, open loop after `--ramp-up`), no plateau with `--number` ≤ `--parallel`, the console
//! rows and `performance_summary.txt`'s `Plateau` table, and the HTML report's banner (only for a run
//! whose load was not as configured) and shaded band.

use std::path::Path;

use crate::common::*;
use serde_json::Value;

/// Rounding slack of the reported window's bounds (written to 6 decimals).
const EPS: f64 = 2e-6;

fn num(s: &Value, key: &str) -> f64 {
    s[key].as_f64().unwrap_or_else(|| panic!("{key}: {s}"))
}

/// The reported window on the database's time base: (first send + start, first send + end).
fn window(db: &Path, s: &Value) -> (f64, f64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let t0: f64 = conn
        .query_row("SELECT MIN(start_time) FROM result", [], |r| r.get(0))
        .unwrap();
    (
        t0 + num(s, "Plateau Start (s)"),
        t0 + num(s, "Plateau End (s)"),
    )
}

/// Successful requests completed in [a, b]: (count, output tokens, prompt + output tokens).
fn completed(db: &Path, a: f64, b: f64) -> (f64, f64, f64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(completion_tokens), 0), \
         COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM result \
         WHERE success = 1 AND completed_time >= ?1 AND completed_time <= ?2",
        [a, b],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as f64,
                r.get::<_, i64>(1)? as f64,
                r.get::<_, i64>(2)? as f64,
            ))
        },
    )
    .unwrap()
}

/// Mean, nearest-rank p50 and p99 of `column` over the successful requests sent in [a, b] (`extra`: a
/// further SQL condition).
fn stats(db: &Path, column: &str, extra: &str, a: f64, b: f64) -> [f64; 3] {
    let conn = rusqlite::Connection::open(db).unwrap();
    let sql = format!(
        "SELECT {column} FROM result WHERE success = 1 AND start_time >= ?1 AND start_time <= ?2 {extra} \
         ORDER BY {column}"
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let v: Vec<f64> = stmt
        .query_map([a, b], |r| r.get::<_, f64>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!v.is_empty(), "{sql}");
    let rank = |p: usize| v[(v.len() * p).div_ceil(100).max(1) - 1];
    [v.iter().sum::<f64>() / v.len() as f64, rank(50), rank(99)]
}

/// Every `Plateau …` metric equals the recount over the reported window (bounds within their rounding:
/// the recount over the window grown and shrunk by [`EPS`] brackets the reported values).
pub fn assert_recount(db: &Path, s: &Value) {
    let (a, b) = window(db, s);
    let length = num(s, "Plateau End (s)") - num(s, "Plateau Start (s)");
    let inner = completed(db, a + EPS, b - EPS);
    let outer = completed(db, a - EPS, b + EPS);
    let requests = num(s, "Plateau Requests");
    assert!(inner.0 <= requests && requests <= outer.0, "{s}");
    assert!(requests > 0.0, "{s}");
    for (key, lo, hi) in [
        ("Plateau Request Throughput (req/s)", inner.0, outer.0),
        ("Plateau Output Throughput (tok/s)", inner.1, outer.1),
        ("Plateau Total Throughput (tok/s)", inner.2, outer.2),
    ] {
        let v = num(s, key) * length;
        assert!(
            lo * (1.0 - 1e-3) <= v && v <= hi * (1.0 + 1e-3),
            "{key}: {v} not in [{lo}, {hi}]: {s}"
        );
    }
    // Streamed runs: TTFT over every streamed success, TPOT over those with more than one token.
    for (metric, column, extra) in [
        ("TTFT", "first_chunk_latency", "AND is_stream = 1"),
        (
            "TPOT",
            "time_per_output_token",
            "AND is_stream = 1 AND completion_tokens > 1",
        ),
        ("Latency", "latency", ""),
    ] {
        let got = [
            num(s, &format!("Plateau Avg {metric} (s)")),
            num(s, &format!("Plateau P50 {metric} (s)")),
            num(s, &format!("Plateau P99 {metric} (s)")),
        ];
        let close = |want: [f64; 3]| got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6);
        let (i, o) = (
            stats(db, column, extra, a + EPS, b - EPS),
            stats(db, column, extra, a - EPS, b + EPS),
        );
        assert!(
            close(i) || close(o),
            "{metric}: {got:?} vs {i:?} / {o:?}: {s}"
        );
    }
}

/// Requests in flight at time `t` (sent at or before it, not yet completed), from the rows.
fn in_flight(rows: &[Row], t: f64) -> usize {
    rows.iter()
        .filter(|r| r.start_time <= t && r.completed_time > t)
        .count()
}

#[test]
fn a_closed_loop_plateau_is_where_every_slot_is_busy_and_its_keys_recount() {
    // 200 ms per request: the client's refill turnaround is a small share of it.
    let sim = timed_sim(200, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 8 --number 64 --max-tokens 3 --stream")
        .flags(r#"--extra-args '{"ignore_eos": true}'"#);
    let output = run.output();
    assert!(output.status.success(), "{}", stderr(&output));
    let dir = run.run_dir("parallel_8_number_64");
    let s = dir.summary();
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(
        at("Plateau Start (s)") > at("Load Rule"),
        "after the verdict"
    );
    assert_recount(&dir.db(), &s);
    // The window is where all 8 slots were busy: 8 in flight just inside both ends, fewer just after it.
    let rows = dir.rows();
    let (a, b) = window(&dir.db(), &s);
    assert_eq!(in_flight(&rows, a + EPS), 8, "{s}");
    assert_eq!(in_flight(&rows, b - EPS), 8, "{s}");
    assert!(in_flight(&rows, b + EPS) < 8, "{s}");
    let last_end = rows
        .iter()
        .map(|r| r.completed_time)
        .fold(f64::MIN, f64::max);
    let first = rows.iter().map(|r| r.start_time).fold(f64::MAX, f64::min);
    let coverage = (b - a) / (last_end - first) * 100.0;
    assert!(
        (num(&s, "Plateau Coverage (%)") - coverage).abs() < 0.01,
        "{s}"
    );
    assert!(coverage > 50.0 && coverage <= 100.0, "{coverage}");
    assert!(s["Plateau Rule"]
        .as_str()
        .unwrap()
        .starts_with("closed loop"));
    let log = stderr(&output) + &String::from_utf8_lossy(&output.stdout);
    assert!(log.contains("Plateau (s)"), "{log}");
    let report = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(report.contains("Plateau"), "{report}");
    // A banner exactly when the verdict is false (on a loaded machine it can be: the client is slow).
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    assert_eq!(
        html.contains(r#"class="banner load-banner""#),
        s["Load As Configured"] == false,
        "{s}"
    );
    assert!(
        html.contains(r#"class="plateau""#),
        "the timeline shades the plateau"
    );
}

#[test]
fn an_open_loop_plateau_starts_after_the_ramp_and_ends_at_the_last_send() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 100 --number 200 --ramp-up 0.5 --burstiness 400")
        .flags("--max-tokens 2 --seed 5 --no-test-connection --stream");
    let dir = run.ok_dir("rate_100.0_number_200");
    let s = dir.summary();
    let rows = dir.rows();
    let first = rows.iter().map(|r| r.start_time).fold(f64::MAX, f64::min);
    let last = rows.iter().map(|r| r.start_time).fold(f64::MIN, f64::max);
    assert!((num(&s, "Plateau Start (s)") - 0.5).abs() < 1e-6, "{s}");
    assert!(
        (num(&s, "Plateau End (s)") - (last - first)).abs() < 1e-6,
        "{s}"
    );
    assert!(s["Plateau Rule"].as_str().unwrap().contains("--ramp-up"));
    assert_recount(&dir.db(), &s);
    // The arguments keep --ramp-up, for `llmperf merge`.
    assert_eq!(dir.args()["ramp_up"], 0.5);
}

#[test]
fn a_run_that_fits_in_one_wave_has_no_plateau_and_a_true_verdict_no_banner() {
    // 500 ms per request: all 8 are in flight together even on a loaded machine, so the verdict is true.
    let sim = timed_sim(500, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 8 --number 8 --max-tokens 2");
    let s = run.ok_dir("parallel_8_number_8").summary();
    assert_eq!(s["Load As Configured"], true, "{s}");
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    assert!(
        !html.contains(r#"class="banner load-banner""#),
        "no banner for a true verdict"
    );
    for key in [
        "Plateau Start (s)",
        "Plateau End (s)",
        "Plateau Coverage (%)",
        "Plateau Request Throughput (req/s)",
        "Plateau P99 TTFT (s)",
    ] {
        assert!(s[key].is_null(), "{key}: {s}");
    }
    assert!(s["Plateau Rule"]
        .as_str()
        .unwrap()
        .contains("--number 8 ≤ --parallel 8"));
}

#[test]
fn a_load_not_as_configured_gets_a_banner_naming_its_reason() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 500 --number 40 --max-tokens 1 --no-test-connection")
        .env("LLMPERF_INJECT_CLIENT_WORK_US", "20000");
    let s = run.ok_dir("rate_500.0_number_40").summary();
    assert_eq!(s["Load As Configured"], false, "{s}");
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    let banner = html
        .split(r#"<p class="banner load-banner""#)
        .nth(1)
        .unwrap_or_else(|| panic!("no banner"));
    let banner = &banner[..banner.find("</p>").unwrap()];
    assert!(banner.contains("rate_500.0_number_40"), "{banner}");
    assert!(
        banner.contains("arrival process fell behind"),
        "the reason: {banner}"
    );
}
