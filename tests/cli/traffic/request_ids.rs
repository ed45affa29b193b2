//! Request ids: every request carries `X-Request-Id` (or `--request-id-header`), the simulator logs the
//! value the database's `request_id` stores, unique across the runs of a sweep and across shards;
//! `--no-request-id` sends none.

use std::collections::BTreeSet;
use std::process::Stdio;

use llmperf::sim::{SimConfig, SimServer};

use super::{column, request_log};
use crate::common::{llmperf_command, ok, serve_mock, Run};

/// The ids of a request log's lines (each must have one).
fn logged_ids(log: &[serde_json::Value]) -> Vec<String> {
    log.iter()
        .map(|l| l["request_id"].as_str().expect("an id header").to_string())
        .collect()
}

#[test]
fn every_request_carries_the_id_the_database_stores_across_a_sweep() {
    let run = Run::new();
    let log = run.file("requests.jsonl", "");
    let run = run
        .flags("--api mock --model m --mock-ttft-ms 0 --mock-itl-ms 0 --max-tokens 2 --prompt hi")
        .flags("--parallel 1 3 --number 4 9 --name ids")
        .flag("--mock-request-log", &log);
    run.ok();
    // Each run's connection test is a request too (with its own id, not stored).
    let logged = logged_ids(&request_log(&log));
    assert_eq!(logged.len(), 13 + 2, "every request logged once");
    let mut stored = BTreeSet::new();
    for (dir, n) in [("parallel_1_number_4", 4), ("parallel_3_number_9", 9)] {
        let ids = column(&run.run_dir(dir).db(), "request_id");
        assert_eq!(ids.len(), n);
        stored.extend(ids.into_iter().map(|id| id.expect("an id stored")));
    }
    assert_eq!(stored.len(), 13, "unique across the sweep");
    let logged: BTreeSet<String> = logged.into_iter().collect();
    assert_eq!(logged.len(), 15, "unique, connection tests included");
    assert!(stored.is_subset(&logged), "the header is the stored id");
}

#[test]
fn the_header_name_is_configurable_and_no_request_id_sends_none() {
    let run = Run::new();
    let log = run.file("requests.jsonl", "");
    let run = run
        .flags("--api mock --model m --mock-ttft-ms 0 --mock-itl-ms 0 --max-tokens 2 --number 3 --prompt hi")
        .flags("--request-id-header X-Correlation-Id")
        .flag("--mock-request-log", &log);
    let dir = run.ok_dir("parallel_1_number_3");
    let logged: BTreeSet<String> = logged_ids(&request_log(&log)).into_iter().collect();
    let stored: BTreeSet<String> = column(&dir.db(), "request_id")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(logged.len(), 3 + 1, "3 requests and the connection test");
    assert!(
        stored.len() == 3 && stored.is_subset(&logged),
        "{stored:?} in {logged:?}"
    );

    let sim = SimServer::start(SimConfig {
        ttft: std::time::Duration::ZERO,
        itl: std::time::Duration::ZERO,
        ..SimConfig::default()
    })
    .unwrap();
    let dir = Run::against(&sim)
        .flags("--number 3 --max-tokens 2 --no-request-id --prompt hi")
        .ok_dir("parallel_1_number_3");
    let requests = sim.requests();
    assert_eq!(requests.len(), 3 + 1, "3 requests and the connection test");
    for (_, _, headers) in &requests {
        assert!(
            !headers.iter().any(|(k, _)| k == "x-request-id"),
            "{headers:?}"
        );
    }
    assert_eq!(column(&dir.db(), "request_id"), [None, None, None]);
    // With ids on, the simulator's copy of each request shows the header.
    let dir = Run::against(&sim)
        .flags("--number 2 --max-tokens 2 --prompt hi")
        .ok_dir("parallel_1_number_2");
    let sent: BTreeSet<String> = sim.requests()[4..]
        .iter()
        .map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k == "x-request-id")
                .expect("x-request-id sent")
                .1
                .clone()
        })
        .collect();
    let stored: BTreeSet<String> = column(&dir.db(), "request_id")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(sent.len(), 2 + 1, "2 requests and the connection test");
    assert!(
        stored.len() == 2 && stored.is_subset(&sent),
        "{stored:?} in {sent:?}"
    );
}

#[test]
fn ids_are_unique_across_four_shards() {
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("requests.jsonl");
    let (mut server, url) = serve_mock(&[
        "--ttft-ms",
        "0",
        "--itl-ms",
        "0",
        "--mock-request-log",
        log.to_str().unwrap(),
    ]);
    let out = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..4)
        .map(|k| {
            let shard = format!("{k}/4");
            llmperf_command(
                out.path(),
                &[
                    "--url",
                    &url,
                    "--model",
                    "m",
                    "--number",
                    "20",
                    "--parallel",
                    "4",
                    "--prompt",
                    "hi",
                    "--max-tokens",
                    "2",
                    "--shard",
                    &shard,
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        ok(&child.wait_with_output().unwrap());
    }
    drop(server.stdin.take());
    server.wait().unwrap();
    let dbs: Vec<_> = crate::common::files_under(out.path())
        .into_iter()
        .filter(|p| p.ends_with("benchmark_data.db"))
        .collect();
    assert_eq!(dbs.len(), 4, "one database per shard: {dbs:?}");
    let stored: Vec<String> = dbs
        .iter()
        .flat_map(|db| column(db, "request_id"))
        .map(Option::unwrap)
        .collect();
    assert_eq!(stored.len(), 20, "the 4 shards share the 20 requests");
    let unique: BTreeSet<String> = stored.iter().cloned().collect();
    assert_eq!(unique.len(), 20, "ids unique across shards");
    let logged: BTreeSet<String> = logged_ids(&request_log(&log)).into_iter().collect();
    assert_eq!(
        logged.len(),
        20 + 4,
        "the requests and each shard's connection test"
    );
    assert!(
        unique.is_subset(&logged),
        "what the server saw is what was stored"
    );
}
