//! The delivered-load verdict (docs/load-verdict.md) through the CLI against the simulator: the keys after
//! evalscope's in `benchmark_summary.json` recounted from the stored rows, the console rows, the
//! `Delivered Load` table of `performance_summary.txt`, and the rule of each mode.

use crate::common::*;
use serde_json::Value;

fn num(s: &Value, key: &str) -> f64 {
    s[key].as_f64().unwrap_or_else(|| panic!("{key}: {s}"))
}

/// The new keys come after every evalscope key, in their order.
fn assert_after_evalscope_keys(s: &Value) {
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    let at = |k: &str| {
        keys.iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert!(
        at("Max In Flight") > at("Client Limited"),
        "after the client keys, after evalscope's"
    );
    assert!(at("Load As Configured") > at("Max In Flight"));
    assert!(at("Load Tolerance (%)") > at("Load As Configured"));
}

#[test]
fn a_full_closed_loop_delivers_its_concurrency() {
    // One second per request, four rounds of 16: the client's turnaround between a response's last event
    // and the next send on the freed slot (about 1–3 ms in a debug build on a shared 2-core machine) and
    // the first round's stagger (up to ~20 ms) stay far under the 2 % the issue asks. No warmup, so the
    // recount from the stored rows is exact.
    let sim = timed_sim(1000, 1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 16 --number 64 --max-tokens 2")
        .flags(r#"--extra-args '{"ignore_eos": true}'"#);
    let output = run.output();
    assert!(output.status.success(), "{}", stderr(&output));
    let dir = run.run_dir("parallel_16_number_64");
    let s = dir.summary();
    let (delivered, max, _) = load_recount(&dir.rows());
    assert!(
        (num(&s, "Delivered Concurrency") - delivered).abs() < 1e-3,
        "{s}"
    );
    // Within 2 % of --parallel (the issue's bound; the verdict's tolerance is 5 %).
    assert!((15.68..=16.0).contains(&delivered), "delivered {delivered}");
    assert_eq!(s["Max In Flight"], max);
    assert_eq!(max, 16);
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert_eq!(s["Load Tolerance (%)"], 5.0);
    assert!(s.get("Load Verdict Reason").is_none());
    assert!(s.get("Rate Error (%)").is_none(), "no rate was configured");
    assert_after_evalscope_keys(&s);
    let log = stderr(&output) + &String::from_utf8_lossy(&output.stdout);
    assert!(log.contains("Load as configured"), "{log}");
    assert!(!log.contains("the load was not as configured"));
    let report = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(report.contains("Delivered Load"), "{report}");
    assert!(report.contains("Reached after s"), "{report}");
}

#[test]
fn an_open_loop_delivers_its_rate() {
    let sim = fast_sim();
    // Nearly even gaps (gamma shape 400): the drawn schedule's own rate is within 1 % of --rate.
    let run = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 200 --number 400 --burstiness 400")
        .flags("--max-tokens 1 --seed 5 --no-test-connection");
    run.ok();
    let dir = run.run_dir("rate_200.0_number_400");
    let s = dir.summary();
    let (_, _, achieved) = load_recount(&dir.rows());
    assert!(
        (num(&s, "Achieved Rate (req/s)") - achieved).abs() < 1e-3,
        "{s}"
    );
    assert!(
        (achieved - 200.0).abs() <= 0.02 * 200.0,
        "achieved {achieved}"
    );
    let error = (achieved / 200.0 - 1.0) * 100.0;
    assert!((num(&s, "Rate Error (%)") - error).abs() < 0.01, "{s}");
    assert!(
        s.get("Delivered Concurrency").is_none(),
        "open loop has no cap"
    );
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert!(s["Load Rule"].as_str().unwrap().contains("schedule"));
}

#[test]
fn a_client_that_cannot_keep_up_is_named() {
    let sim = fast_sim();
    // 20 ms of client work before every send: at most ~50 sends/s per core against 500 asked.
    let run = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 500 --number 60 --max-tokens 1 --no-test-connection")
        .env("LLMPERF_INJECT_CLIENT_WORK_US", "20000");
    let output = run.output();
    assert!(output.status.success(), "{}", stderr(&output));
    let s = run.run_dir("rate_500.0_number_60").summary();
    assert_eq!(s["Load As Configured"], false, "{s}");
    let reason = s["Load Verdict Reason"].as_str().unwrap();
    assert!(
        reason.starts_with("arrival process fell behind"),
        "{reason}"
    );
    assert!(reason.contains("client-limited"), "{reason}");
    assert!(num(&s, "Rate Error (%)") < -5.0, "{s}");
    let log = stderr(&output) + &String::from_utf8_lossy(&output.stdout);
    assert!(
        log.contains("WARN") && log.contains("the load was not as configured"),
        "{log}"
    );
    let report = std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(
        report.contains("the load was not as configured"),
        "{report}"
    );
}

#[test]
fn refused_connections_name_the_server() {
    // A port nothing listens on: every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = Run::with_url(&format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .flags("--prompt a --parallel 2 --number 4 --max-tokens 1 --no-test-connection");
    let _ = run.output();
    let s = run.run_dir("parallel_2_number_4").summary();
    assert_eq!(s["Load As Configured"], false, "{s}");
    assert_eq!(
        s["Load Verdict Reason"],
        "server refused connections: 4 of 4 requests could not connect"
    );
}

#[test]
fn fewer_requests_than_parallel_need_only_be_in_flight_together() {
    let sim = timed_sim(50, 1);
    let s = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 8 --number 3 --max-tokens 2")
        .ok_dir("parallel_8_number_3")
        .summary();
    assert_eq!(s["Max In Flight"], 3);
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert!(s["Load Rule"]
        .as_str()
        .unwrap()
        .contains("--number 3 ≤ --parallel 8"));
}

#[test]
fn a_paced_closed_loop_keeps_its_intended_times() {
    let sim = fast_sim();
    let s = Run::against(&sim)
        .flags("--prompt a --parallel 4 --rate 50 --number 40 --max-tokens 1 --seed 3")
        .ok_dir("parallel_4_number_40")
        .summary();
    assert!(s["Load Rule"].as_str().unwrap().contains("schedule"), "{s}");
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert!(s.get("Rate Error (%)").is_some());
    // A cap that binds (one slot, 100 ms per request, 50 req/s asked): the intended times wait for the
    // slot, so the run is as configured (both limits held) and the rate error shows what the cap cost.
    let slow = timed_sim(100, 1);
    let s = Run::at(&slow, "/v1/chat/completions")
        .flags("--prompt a --parallel 1 --rate 50 --number 5 --max-tokens 1 --seed 3")
        .ok_dir("parallel_1_number_5")
        .summary();
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert!(num(&s, "Rate Error (%)") < -50.0, "{s}");
    assert_eq!(s["Max In Flight"], 1);
}

#[test]
fn a_server_that_refuses_connections_beyond_a_limit_is_named() {
    // The simulator takes 4 connections; the other 4 slots' connections are reset before any byte.
    let run = Run::new()
        .flags("--api mock --model m --mock-max-connections 4 --mock-ttft-ms 100 --mock-itl-ms 1")
        .flags("--prompt a --parallel 8 --number 24 --max-tokens 2");
    let _ = run.output();
    let dir = run.run_dir("parallel_8_number_24");
    assert_eq!(dir.rows().len(), 24, "every request stored");
    let count = |filter: &str| -> usize {
        let db = rusqlite::Connection::open(dir.db()).unwrap();
        let sql = format!("SELECT count(*) FROM result WHERE {filter}");
        db.query_row(&sql, [], |r| r.get(0)).unwrap()
    };
    // A refused connection fails on connecting (`connect`: reset while the client's connect completed) or
    // on the request (`reset` / `disconnect` before any response byte: no status).
    let unreachable = count("failure_kind = 'connect'");
    let dropped = count("status_code IS NULL AND failure_kind IN ('reset', 'disconnect')");
    assert!(unreachable + dropped > 0, "some connections refused");
    assert_eq!(
        count("success = 0"),
        unreachable + dropped,
        "every failure is a refused connection"
    );
    let mut parts = Vec::new();
    if unreachable > 0 {
        parts.push(format!("{unreachable} of 24 requests could not connect"));
    }
    if dropped > 0 {
        parts.push(format!(
            "{dropped} of 24 requests had their connection reset or closed before any response byte"
        ));
    }
    let s = dir.summary();
    assert_eq!(s["Load As Configured"], false, "{s}");
    assert_eq!(
        s["Load Verdict Reason"],
        format!("server refused connections: {}", parts.join(", "))
    );
    assert_eq!(dir.args()["mock_max_connections"], 4);
    // Within the limit: every connection is served and the load is as configured.
    let within = Run::new()
        .flags("--api mock --model m --mock-max-connections 4 --mock-ttft-ms 100 --mock-itl-ms 1")
        .flags("--prompt a --parallel 4 --number 12 --max-tokens 2");
    let s = within.ok_dir("parallel_4_number_12").summary();
    assert_eq!(s["Load As Configured"], true, "{s}");
    assert_eq!(s["Max In Flight"], 4);
}

/// Seconds from the first stored send until `level` requests were first in flight, from the rows alone.
fn reached_from_rows(rows: &[Row], level: usize) -> f64 {
    let first = rows.iter().map(|r| r.start_time).fold(f64::MAX, f64::min);
    let mut starts: Vec<f64> = rows.iter().map(|r| r.start_time).collect();
    starts.sort_by(f64::total_cmp);
    let at = starts
        .iter()
        .find(|&&t| {
            rows.iter()
                .filter(|r| r.start_time <= t && r.completed_time > t)
                .count()
                >= level
        })
        .expect("the level was reached");
    at - first
}

#[test]
fn the_time_the_load_took_to_reach_its_level_counts_the_warmup() {
    let sim = timed_sim(500, 1);
    // No warmup: the first time all 8 slots were busy, recounted from the rows.
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 8 --number 16 --max-tokens 2");
    let dir = run.ok_dir("parallel_8_number_16");
    let s = dir.summary();
    let reached = reached_from_rows(&dir.rows(), 8);
    assert!(
        (num(&s, "Load Reached After (s)") - reached).abs() < 1e-3,
        "{s}"
    );
    assert!(
        reached < 0.25,
        "the first round fills the slots at once: {reached}"
    );
    // Four warmup requests hold four of the 8 slots from the first send: the load is at its level at once,
    // although the stored (measured) rows alone reach 8 in flight only when the warmup has ended.
    let warm = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt x --parallel 8 --number 16 --max-tokens 2 --warmup-num 4");
    let dir = warm.ok_dir("parallel_8_number_16");
    let s = dir.summary();
    let measured_only = reached_from_rows(&dir.rows(), 8);
    assert!(
        measured_only >= 0.4,
        "the warmup held slots: {measured_only}"
    );
    let with_warmup = num(&s, "Load Reached After (s)");
    assert!(with_warmup < 0.25, "{s}");
    assert_eq!(s["Load As Configured"], true, "{s}");
}

#[test]
fn an_open_loop_reaches_its_rate_at_the_end_of_its_ramp() {
    let sim = fast_sim();
    let ramp = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 40 --number 40 --ramp-up 1 --max-tokens 1 --seed 2")
        .flags("--no-test-connection");
    let s = ramp.ok_dir("rate_40.0_number_40").summary();
    assert_eq!(num(&s, "Load Reached After (s)"), 1.0, "{s}");
    assert!(
        s["Load Rule"]
            .as_str()
            .unwrap()
            .contains("drawn arrival schedule"),
        "{s}"
    );
    assert_eq!(s["Load As Configured"], true, "{s}");
    let flat = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 40 --number 20 --max-tokens 1 --seed 2")
        .flags("--no-test-connection");
    let s = flat.ok_dir("rate_40.0_number_20").summary();
    assert_eq!(num(&s, "Load Reached After (s)"), 0.0, "{s}");
}

#[test]
fn an_open_loop_warmup_keeps_the_rate() {
    // Four warmup requests at --rate 10: they reach the simulator about 0.1 s apart, not in one burst.
    let sim = fast_sim();
    Run::against(&sim)
        .flags("--prompt a --open-loop --rate 10 --number 4 --warmup-num 4 --max-tokens 1 --seed 1")
        .flags("--no-test-connection")
        .ok_dir("rate_10.0_number_4");
    let mut arrivals: Vec<f64> = sim.truth().iter().map(|t| t.received_s).collect();
    arrivals.sort_by(f64::total_cmp);
    assert_eq!(arrivals.len(), 8, "4 warmup and 4 measured requests");
    // The first four are the warmup (a barrier separates the phases): three gaps of 0.1 s.
    let warmup_span = arrivals[3] - arrivals[0];
    assert!(
        warmup_span >= 0.25,
        "warmup sent in a burst: {warmup_span} s"
    );
}
