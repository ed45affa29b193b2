//! Several endpoints (`--url-strategy` with a repeated `--url`): `least-inflight` sends more to the faster
//! of two simulators, both in `breakdown_by_endpoint.json` and the `endpoint` column; an endpoint killed
//! mid-run fails its requests with the connection kind while the other keeps serving, nothing lost; a
//! conversation keeps its endpoint; without `--url-strategy` the last `--url` wins, as in evalscope.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use llmperf::sim::{SimConfig, SimServer};

use super::column;
use crate::common::{json_file, Run};
use crate::tokens::tokenizer_dir;

fn sim(ttft_ms: u64, itl_ms: u64) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        ..SimConfig::default()
    })
    .unwrap()
}

fn url(sim: &SimServer) -> String {
    format!("{}/v1/chat/completions", sim.base_url())
}

/// Rows per value of the `endpoint` column.
fn per_endpoint(db: &std::path::Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for e in column(db, "endpoint") {
        *counts.entry(e.expect("an endpoint stored")).or_default() += 1;
    }
    counts
}

#[test]
fn least_inflight_favours_the_fast_endpoint_and_both_are_in_the_breakdown() {
    let (fast, slow) = (sim(5, 2), sim(25, 10));
    let dir = Run::new()
        .flag("--url", url(&fast))
        .flag("--url", url(&slow))
        .flags("--model m --url-strategy least-inflight --parallel 6 --number 240 --prompt hi")
        .flags(r#"--max-tokens 8 --extra-args '{"ignore_eos": true}'"#)
        .ok_dir("parallel_6_number_240");
    let counts = per_endpoint(&dir.db());
    let (f, s) = (counts[&url(&fast)], counts[&url(&slow)]);
    assert_eq!(f + s, 240);
    assert!(f > s && s > 0, "fast {f}, slow {s}");
    // Each simulator served what the rows say (plus its connection test).
    assert_eq!(fast.requests().len(), f + 1);
    assert_eq!(slow.requests().len(), s + 1);
    let breakdown = json_file(&dir.join("breakdown_by_endpoint.json"));
    assert_eq!(breakdown[url(&fast)]["Total Requests"], f as i64);
    assert_eq!(breakdown[url(&slow)]["Total Requests"], s as i64);
    let slow_latency = breakdown[url(&slow)]["Avg Latency (s)"].as_f64().unwrap();
    let fast_latency = breakdown[url(&fast)]["Avg Latency (s)"].as_f64().unwrap();
    assert!(slow_latency > fast_latency, "{breakdown}");
    let html = std::fs::read_to_string(dir.parent().unwrap().join("perf_report.html")).unwrap();
    assert!(html.contains("Per endpoint"));
    assert!(html.contains(&format!("<th scope=\"row\">{}</th>", url(&slow))));
}

#[test]
fn a_killed_endpoint_fails_with_the_connection_kind_while_the_other_serves() {
    let live = sim(2, 1);
    let mut doomed = sim(2, 1);
    let run = Run::new()
        .flag("--url", url(&live))
        .flag("--url", url(&doomed))
        .flags("--model m --url-strategy round-robin --parallel 2 --number 400 --prompt hi")
        .flags("--max-tokens 4 --rate 100 --name kill");
    let mut child = run
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    while doomed.requests().len() < 20 && waited.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    doomed.kill();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let dir = run.run_dir("parallel_2_number_400");
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let mut stmt = conn
        .prepare("SELECT endpoint, success, failure_kind FROM result")
        .unwrap();
    let rows: Vec<(String, bool, Option<String>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? == 1, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 400, "nothing lost");
    let live_rows: Vec<_> = rows.iter().filter(|r| r.0 == url(&live)).collect();
    assert!(
        live_rows.iter().all(|r| r.1),
        "the live endpoint kept serving"
    );
    assert!(live_rows.len() >= 190, "{}", live_rows.len());
    let dead_failures: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.0 == url(&doomed) && !r.1)
        .map(|r| r.2.as_deref().unwrap())
        .collect();
    assert!(dead_failures.contains("connect"), "{dead_failures:?}");
    assert!(
        dead_failures
            .iter()
            .all(|k| ["connect", "reset", "disconnect"].contains(k)),
        "{dead_failures:?}"
    );
}

#[test]
fn a_conversation_keeps_its_endpoint() {
    let (a, b) = (sim(0, 0), sim(0, 0));
    let dir = Run::new()
        .flag("--url", url(&a))
        .flag("--url", url(&b))
        .flags("--model m --url-strategy round-robin --multi-turn --dataset random_multi_turn")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags("--min-turns 3 --max-turns 3 --min-prompt-length 8 --max-prompt-length 12")
        .flags("--number 8 --parallel 2 --max-tokens 2")
        .ok_dir("parallel_2_number_8");
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let mut stmt = conn
        .prepare("SELECT conversation_id, endpoint FROM result")
        .unwrap();
    let mut by_conv: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (c, e) = row.unwrap();
        by_conv.entry(c).or_default().insert(e);
    }
    assert_eq!(by_conv.len(), 8);
    assert!(by_conv.values().all(|e| e.len() == 1), "{by_conv:?}");
    let used: BTreeSet<&String> = by_conv.values().flatten().collect();
    assert_eq!(used.len(), 2, "{used:?}");
}

#[test]
fn without_a_strategy_the_last_url_wins_and_mock_refuses_one() {
    let (first, last) = (sim(0, 0), sim(0, 0));
    let dir = Run::new()
        .flag("--url", url(&first))
        .flag("--url", url(&last))
        .flags("--model m --number 3 --prompt hi --max-tokens 2")
        .ok_dir("parallel_1_number_3");
    assert_eq!(first.requests().len(), 0);
    assert_eq!(last.requests().len(), 3 + 1);
    assert_eq!(column(&dir.db(), "endpoint"), [None, None, None]);
    assert!(!dir.join("breakdown_by_endpoint.json").exists());
    let run = Run::new().flags("--api mock --model m --url-strategy random");
    assert!(run.fails(2).contains("--url-strategy"));
}

#[test]
fn server_metrics_scrape_every_endpoint_by_default() {
    let (a, b) = (sim(0, 0), sim(0, 0));
    let dir = Run::new()
        .flag("--url", url(&a))
        .flag("--url", url(&b))
        .flags("--model m --url-strategy round-robin --number 6 --prompt hi --max-tokens 2")
        .flags("--no-test-connection --server-metrics --server-metrics-interval 0.05")
        .ok_dir("parallel_1_number_6");
    let file = json_file(&dir.join("server_metrics.json"));
    let endpoints = file["endpoints"].as_array().unwrap();
    let urls: BTreeSet<&str> = endpoints
        .iter()
        .map(|e| e["url"].as_str().unwrap())
        .collect();
    let want: BTreeSet<String> = [&a, &b]
        .iter()
        .map(|s| format!("{}/metrics", s.base_url()))
        .collect();
    assert_eq!(urls, want.iter().map(String::as_str).collect());
    for e in endpoints {
        assert_eq!(
            e["counters"]["vllm:request_success_total"]["delta"], 3,
            "{e}"
        );
    }
}
