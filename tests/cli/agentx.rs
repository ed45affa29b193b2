//! `--scenario agentx` through the CLI against the simulator: a small generated AgentX (`cc-traces-weka`)
//! trace with a sub-agent branch, an async sub-agent, tool latencies and shared hash-id prefixes replays with
//! every call at its place in the session graph and after its recorded pause (checked on the stored rows and
//! on the simulator's own log), and writes evalscope's scenario files with evalscope's keys. Bad input —
//! an unknown scenario key, a malformed trace line, a checksum mismatch — exits 2 naming it, writing nothing.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::Value;

use crate::common::{json_file, llmperf, llmperf_env, ok, run_root};
use crate::tokens::tokenizer_dir;

/// Session `s1` (local hash ids): a main agent that spawns a sub-agent `a1` (two calls, waited for) and an
/// async sub-agent `a2` (not waited for), then two more calls; session `s2` (global hash ids): two calls.
const TRACE: &str = r#"{"id":"s1","models":["m"],"block_size":16,"hash_id_scope":"local","tool_tokens":0,"system_tokens":0,"requests":[{"type":"n","t":0.0,"model":"m","in":40,"out":3,"hash_ids":[1,2],"api_time":0.1,"stop":"tool_use"},{"type":"subagent","t":0.15,"agent_id":"a1","subagent_type":"Explore","status":"completed","duration_ms":400,"total_tokens":60,"tool_use_count":1,"models":["m"],"requests":[{"type":"s","t":0.2,"model":"m","in":24,"out":2,"hash_ids":[10],"api_time":0.05,"ttft":0.01},{"type":"n","t":0.35,"model":"m","in":30,"out":2,"hash_ids":[10,11],"api_time":0.05}]},{"type":"subagent","t":0.15,"agent_id":"a2","subagent_type":"Explore","status":"async_launched","models":["m"],"requests":[{"type":"n","t":0.25,"model":"m","in":20,"out":2,"hash_ids":[20]}]},{"type":"n","t":0.7,"model":"m","in":60,"out":4,"hash_ids":[1,2,3],"api_time":0.1},{"type":"n","t":0.9,"model":"m","in":70,"out":2,"hash_ids":[1,2,3,4],"api_time":0.05,"stop":"end_turn"}]}
{"id":"s2","models":["m"],"block_size":16,"hash_id_scope":"global","requests":[{"type":"s","t":0.05,"model":"m","in":32,"out":2,"hash_ids":[100,101],"api_time":0.05},{"type":"s","t":0.3,"model":"m","in":48,"out":3,"hash_ids":[100,101,102],"think_time":0.2}]}
"#;

/// Per call, worked out by hand from the trace: what it waits for, its pause after the last of those ends
/// (its `t` minus their recorded end), and its recorded output length.
fn expected() -> HashMap<&'static str, (Vec<&'static str>, f64, i64)> {
    HashMap::from([
        ("s1:0", (vec![], 0.0, 3)),
        ("a1:0", (vec!["s1:0"], 0.2 - 0.1, 2)),
        ("a1:1", (vec!["a1:0"], 0.35 - 0.25, 2)),
        ("a2:0", (vec!["s1:0"], 0.25 - 0.1, 2)),
        // After s1:0 and all of a1 (recorded end 0.15 + 0.4), not after the async a2.
        ("s1:1", (vec!["s1:0", "a1:0", "a1:1"], 0.7 - 0.55, 4)),
        ("s1:2", (vec!["s1:1"], 0.9 - 0.8, 2)),
        ("s2:0", (vec![], 0.05, 2)),
        ("s2:1", (vec!["s2:0"], 0.3 - 0.1, 3)),
    ])
}

struct Row {
    request_id: String,
    body: Value,
    success: bool,
    scheduled: f64,
    send: f64,
    completed: f64,
    cached: Option<i64>,
}

fn db_rows(db: &Path) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT request_id, request, success, scheduled_time, send_time, completed_time, cached_tokens \
             FROM result ORDER BY send_time",
        )
        .unwrap();
    stmt.query_map([], |r| {
        let body: String = r.get(1)?;
        Ok(Row {
            request_id: r.get(0)?,
            body: serde_json::from_str(&body).unwrap(),
            success: r.get::<_, i64>(2)? == 1,
            scheduled: r.get(3)?,
            send: r.get(4)?,
            completed: r.get(5)?,
            cached: r.get(6)?,
        })
    })
    .unwrap()
    .collect::<Result<Vec<_>, _>>()
    .unwrap()
}

fn trace_dir(dir: &Path, text: &str) -> String {
    let data = dir.join("agentx-data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("traces.jsonl"), text).unwrap();
    data.to_string_lossy().into_owned()
}

/// evalscope 1.14.1's `AgentXRunSummary` keys, in order.
const SUMMARY_KEYS: [&str; 19] = [
    "schema_version",
    "status",
    "scenario",
    "concurrency",
    "duration",
    "seed",
    "aiperf_version",
    "aiperf_schema_version",
    "dataset",
    "submission_valid",
    "aiperf_submission_valid",
    "aiperf_submission_invalid_reasons",
    "mirror_revalidated",
    "metrics",
    "derived_metrics",
    "error_summary",
    "raw_artifact_dir",
    "raw_summary_file",
    "command",
];

/// evalscope's `AgentXMetric` keys.
const METRIC_KEYS: [&str; 16] = [
    "unit", "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
    "p99", "count", "sum",
];

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn sessions_replay_on_their_graph_and_write_evalscopes_files() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(2),
        prefix_cache: true,
        ..SimConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = trace_dir(dir.path(), TRACE);
    let out = dir.path().join("out");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let tok = tokenizer_dir("qwen3");
    ok(&llmperf(
        &out,
        &[
            "--scenario",
            r#"{"name":"agentx","mode":"smoke","trace_limit":2,"num_gpus":2,"engine":"sim"}"#,
            "--model",
            "m",
            "--tokenizer-path",
            &tok,
            "--url",
            &url,
            "--dataset-path",
            &data,
            "--parallel",
            "2",
            // Long enough for the first two replays to end on a loaded machine (they need ~1 s idle).
            "--duration",
            "6",
            "--name",
            "ax",
        ],
    ));
    let root = run_root(&out, "ax");
    let run_dir = root.join("agentx_256k/parallel_2");
    let rows = db_rows(&run_dir.join("benchmark_data.db"));
    let want = expected();

    // Rows by session replay (`<claim>/<agent>:<turn>`).
    let mut claims: HashMap<String, HashMap<String, &Row>> = HashMap::new();
    for r in &rows {
        assert!(r.success, "{} failed", r.request_id);
        let (claim, name) = r.request_id.split_once('/').unwrap();
        let (_, _, out_tokens) = &want[name];
        assert_eq!(r.body["max_tokens"], *out_tokens, "{}", r.request_id);
        assert_eq!(r.body["ignore_eos"], true);
        assert_eq!(r.body["model"], "m");
        claims
            .entry(claim.to_string())
            .or_default()
            .insert(name.to_string(), r);
    }
    // The first two replays (s1 by one worker, s2 by the other) are complete.
    assert_eq!(claims["0"].len(), 6, "{:?}", claims["0"].keys());
    assert_eq!(claims["1"].len(), 2, "{:?}", claims["1"].keys());
    // How late this client was at its busiest (the largest send lag of the run): a call is scheduled when
    // the replay task sees its dependencies end, which a busy machine delays the same way.
    let max_lag = rows
        .iter()
        .map(|r| r.send - r.scheduled)
        .fold(0.0, f64::max);
    let slack = 0.05 + 4.0 * max_lag;
    let mut checked = 0;
    for calls in claims.values() {
        for (name, r) in calls {
            let (deps, delay_s, _) = &want[name.as_str()];
            if deps.is_empty() {
                continue;
            }
            let ready = deps
                .iter()
                .map(|d| {
                    calls
                        .get(*d)
                        .unwrap_or_else(|| panic!("{name} sent before {d}"))
                        .completed
                })
                .fold(f64::MIN, f64::max);
            // Never before its dependencies' end + its pause; after it by no more than the client's own
            // delays.
            let late_s = r.scheduled - (ready + delay_s);
            assert!(
                (0.0..slack).contains(&late_s),
                "{}: scheduled {late_s:.4} s after its dependencies' end + {delay_s} s (slack {slack:.3} s)",
                r.request_id
            );
            assert!(r.send >= r.scheduled, "{} sent early", r.request_id);
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked}");
    // Shared hash-id prefixes are served from the simulator's prefix cache; the first call is not.
    assert_eq!(claims["0"]["s1:0"].cached.unwrap_or(0), 0);
    assert!(claims["0"]["s1:1"].cached.unwrap() > 0);
    assert!(claims["1"]["s2:1"].cached.unwrap() > 0);

    // The simulator's log: one generation per stored row (plus the connection test), never received before
    // the client sent it, with the recorded output length.
    let truth: Vec<_> = sim
        .truth()
        .into_iter()
        .filter(|t| t.path == "/v1/chat/completions")
        .collect();
    assert_eq!(truth.len(), rows.len() + 1);
    let mut received: Vec<f64> = truth.iter().skip(1).map(|t| t.received_s).collect();
    received.sort_by(f64::total_cmp);
    let sends: Vec<f64> = rows.iter().map(|r| r.send).collect();
    let mut sends = sends;
    sends.sort_by(f64::total_cmp);
    for (got, sent) in received.iter().zip(&sends) {
        // Causality, whatever the load: by the time the simulator has received k requests the client has
        // sent at least k (1 ms for reading two clocks).
        assert!(
            got + 0.001 >= *sent,
            "received {got} before the send at {sent}"
        );
    }
    let mut out_tokens: Vec<u64> = truth.iter().skip(1).map(|t| t.completion_tokens).collect();
    let mut want_out: Vec<u64> = rows
        .iter()
        .map(|r| r.body["max_tokens"].as_u64().unwrap())
        .collect();
    out_tokens.sort_unstable();
    want_out.sort_unstable();
    assert_eq!(out_tokens, want_out);

    // evalscope's files and keys.
    assert!(root.join("benchmark.log").is_file());
    // Sessions release their requests along their graphs: no load rule applies.
    let bench = json_file(&run_dir.join("benchmark_summary.json"));
    assert!(bench["Load As Configured"].is_null(), "{bench}");
    assert_eq!(
        bench["Load Rule"],
        "no rule applies: agent sessions release their requests along their dependency graphs"
    );
    assert!(bench["Load Reached After (s)"].is_null());
    let summary = json_file(&run_dir.join("agentx_summary.json"));
    let k = keys(&summary);
    assert_eq!(k[..SUMMARY_KEYS.len()], SUMMARY_KEYS);
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["concurrency"], 2);
    assert_eq!(summary["duration"], 6.0);
    assert_eq!(summary["seed"], 20260707);
    assert_eq!(summary["scenario"]["mode"], "smoke");
    assert_eq!(summary["scenario"]["engine"], "sim");
    assert_eq!(summary["submission_valid"], false);
    assert_eq!(
        keys(&summary["dataset"]),
        [
            "source",
            "dataset_id",
            "revision",
            "trace_file",
            "sha256",
            "verified"
        ]
    );
    assert_eq!(summary["dataset"]["source"], "local");
    assert_eq!(summary["dataset"]["verified"], false);
    for (name, m) in summary["metrics"].as_object().unwrap() {
        assert_eq!(keys(m), METRIC_KEYS, "{name}");
    }
    let m = &summary["metrics"];
    assert_eq!(m["request_count"]["avg"], rows.len() as f64);
    assert_eq!(m["error_request_count"]["avg"], 0.0);
    assert_eq!(
        m["output_sequence_length"]["sum"],
        want_out.iter().sum::<u64>() as f64
    );
    assert_eq!(m["request_latency"]["count"], rows.len());
    let per_gpu = &summary["derived_metrics"]["request_throughput_per_gpu"];
    assert_eq!(
        per_gpu["avg"],
        m["request_throughput"]["avg"].as_f64().unwrap() / 2.0
    );
    assert_eq!(per_gpu["unit"], "requests/sec/GPU");
    // llmperf's keys after evalscope's: the send lag against the graph's due time, the cached share.
    assert_eq!(k[SUMMARY_KEYS.len()..], ["replay_engine", "replay"]);
    let lag = &summary["replay"]["send_lag_ms"];
    assert_eq!(lag["count"], rows.len());
    let max_lag_ms = rows
        .iter()
        .map(|r| (r.send - r.scheduled) * 1000.0)
        .fold(f64::MIN, f64::max);
    assert!((lag["max"].as_f64().unwrap() - max_lag_ms).abs() < 1e-6);
    let cached: i64 = rows.iter().filter_map(|r| r.cached).sum();
    assert!(
        summary["replay"]["server_cached_tokens_pct"]
            .as_f64()
            .unwrap()
            > 0.0
            && cached > 0
    );
    let sweep = json_file(&root.join("agentx_256k/agentx_sweep_summary.json"));
    assert_eq!(keys(&sweep), ["parallel_2"]);
    assert_eq!(sweep["parallel_2"], summary);
}

fn fails_with(out: &Path, args: &[&str], needle: &str) {
    let o = llmperf(out, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn bad_scenarios_traces_and_checksums_exit_2_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer_dir("qwen3");
    let good = trace_dir(dir.path(), TRACE);
    let out = dir.path().join("out");
    let base = |scenario: &'static str, data: &str| -> Vec<String> {
        [
            "--scenario",
            scenario,
            "--model",
            "m",
            "--tokenizer-path",
            &tok,
            "--url",
            "http://127.0.0.1:9/v1/chat/completions",
            "--dataset-path",
            data,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run = |args: Vec<String>, needle: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&out, &refs, needle);
    };
    run(
        base(r#"{"name":"agentx","turbo":true}"#, &good),
        "unknown key \"turbo\"",
    );
    run(
        base(r#"{"name":"agentx","trace_limit":2}"#, &good),
        "trace_limit is only supported when mode is smoke",
    );
    // Benchmark mode: the generated file is not the pinned traces.jsonl.
    run(base("agentx", &good), "hash mismatch for ");
    run(base("agentx", &good), "agentx-data/traces.jsonl");
    // A malformed second line, named with its file.
    let bad_dir = dir.path().join("bad");
    std::fs::create_dir_all(&bad_dir).unwrap();
    let first = TRACE.lines().next().unwrap();
    std::fs::write(
        bad_dir.join("traces.jsonl"),
        format!(
            "{first}\n{}\n",
            first.replace("\"in\":40", "\"in\":\"forty\"")
        ),
    )
    .unwrap();
    run(
        base(
            r#"{"name":"agentx","mode":"smoke"}"#,
            bad_dir.to_str().unwrap(),
        ),
        "traces.jsonl line 2:",
    );
    let mut with_number = base(r#"{"name":"agentx","mode":"smoke"}"#, &good);
    with_number.extend(["--number".to_string(), "5".to_string()]);
    run(
        with_number,
        "AgentX is duration-based; --number is not supported.",
    );
    let missing = dir.path().join("none");
    std::fs::create_dir_all(&missing).unwrap();
    run(
        base(
            r#"{"name":"agentx","mode":"smoke"}"#,
            missing.to_str().unwrap(),
        ),
        "an AgentX dataset must contain traces.jsonl",
    );
}

#[test]
fn the_pinned_revision_is_found_in_the_hugging_face_cache() {
    let sim = crate::common::fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let revision = "8fecd2fc56694469f758f0afbbb6335ad3043740";
    let snapshot = dir
        .path()
        .join("hf/datasets--semianalysisai--cc-traces-weka-062126-256k/snapshots")
        .join(revision);
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::write(snapshot.join("traces.jsonl"), TRACE).unwrap();
    let out = dir.path().join("out");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let tok = tokenizer_dir("qwen3");
    ok(&llmperf_env(
        &out,
        &[
            "--scenario",
            r#"{"name":"agentx","mode":"smoke","trace_limit":1}"#,
            "--data-source",
            "huggingface",
            "--model",
            "m",
            "--tokenizer-path",
            &tok,
            "--url",
            &url,
            "--duration",
            "0.5",
            "--name",
            "hf",
        ],
        &[("HF_HUB_CACHE", dir.path().join("hf").to_str().unwrap())],
    ));
    let summary =
        json_file(&run_root(&out, "hf").join("agentx_256k/parallel_1/agentx_summary.json"));
    let d = &summary["dataset"];
    assert_eq!(d["source"], "huggingface");
    assert_eq!(d["dataset_id"], "semianalysisai/cc-traces-weka-062126-256k");
    assert_eq!(d["revision"], revision);
    assert_eq!(
        d["trace_file"],
        snapshot.join("traces.jsonl").to_str().unwrap()
    );
    assert_eq!(d["verified"], false);
    assert_eq!(summary["duration"], 0.5);
}

#[test]
fn the_pinned_revision_is_downloaded_from_modelscope_with_its_checksum_checked() {
    let sim = crate::common::fast_sim();
    let hub = crate::common::fake_hub::FakeHub::modelscope();
    let id = "evalscope/cc-traces-weka-062126-256k";
    let revision = "a97a07a0474f9287023827b89a1478e52f1917da";
    hub.dataset_file(id, "traces.jsonl", TRACE.as_bytes());
    let cache = tempfile::tempdir().unwrap();
    let run = |mode: &str, name: &str| {
        crate::common::Run::at(&sim, "/v1/chat/completions")
            .args(&[
                "--scenario",
                &match mode {
                    "smoke" => r#"{"name":"agentx","mode":"smoke","trace_limit":1}"#.to_string(),
                    _ => r#"{"name":"agentx","mode":"benchmark"}"#.to_string(),
                },
                "--duration",
                // Benchmark mode's minimum; it stops at the checksum, before sending anything.
                if mode == "smoke" { "0.5" } else { "900" },
                "--name",
                name,
            ])
            .flag("--tokenizer-path", tokenizer_dir("qwen3"))
            .online(cache.path())
            .hub(&hub)
    };
    // The default data source is ModelScope: downloaded at the pinned revision into its cache.
    let smoke = run("smoke", "ms");
    smoke.ok();
    let fetched = hub.requests_to(&format!("/api/v1/datasets/{id}/repo?"));
    assert_eq!(fetched.len(), 1, "{:?}", hub.requests());
    assert!(
        fetched[0].target.contains(&format!("Revision={revision}"))
            && fetched[0].target.contains("FilePath=traces.jsonl"),
        "{}",
        fetched[0].target
    );
    let summary = json_file(
        &smoke
            .root()
            .join("agentx_256k/parallel_1/agentx_summary.json"),
    );
    let d = &summary["dataset"];
    assert_eq!(d["source"], "modelscope");
    assert_eq!(d["dataset_id"], id);
    assert_eq!(d["revision"], revision);
    let file = std::path::PathBuf::from(d["trace_file"].as_str().unwrap());
    assert!(
        file.starts_with(cache.path().join("modelscope")),
        "{file:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), TRACE);
    // The sha256 is checked: these bytes are not the pinned file, so a smoke run marks them unverified and
    // a benchmark run refuses them (from the cache: no second download).
    assert_eq!(d["verified"], false);
    let err = run("benchmark", "bench").fails(2);
    assert!(err.contains("hash mismatch for "), "{err}");
    assert_eq!(
        hub.requests_to(&format!("/api/v1/datasets/{id}/repo?"))
            .len(),
        1
    );
}
