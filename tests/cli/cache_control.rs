//! Server control (issue 27): `--reset-prefix-cache` timed after the warmup and before the first measured
//! request, its failure semantics, the cache state recorded, `--server-profile` windows, and
//! `--target-cache-hit-rate` — against the simulator's reset and profile endpoints.

use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};

use crate::common::*;

/// A simulator with its prefix cache on and a short, real TTFT (so requests overlap).
fn cache_sim(ttft_ms: u64) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(1),
        output_tokens: 4,
        prefix_cache: true,
        ..SimConfig::default()
    })
    .unwrap()
}

/// `(start_time, cached_tokens, prompt_tokens)` of every stored row, by send time.
fn cached_rows(db: &std::path::Path) -> Vec<(f64, i64, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT start_time, cached_tokens, prompt_tokens FROM result ORDER BY start_time")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                r.get::<_, Option<i64>>(2)?.unwrap_or(0),
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

const SWEEP: &str =
    "--prompt 'the same words every time' --parallel 1 2 --number 2 2 --warmup-num 1 --stream";

#[test]
fn without_a_reset_the_second_point_starts_warm() {
    let sim = cache_sim(5);
    let run = Run::at(&sim, "/v1/chat/completions").flags(SWEEP);
    run.ok();
    let second = cached_rows(&run.run_dir("parallel_2_number_2").db());
    assert!(second[0].1 > 0, "served before: cached {second:?}");
    assert!(sim.control_calls().is_empty());
    assert!(run
        .run_dir("parallel_2_number_2")
        .summary()
        .get("prefix_cache_reset")
        .is_none());
}

#[test]
fn each_run_resets_after_the_warmup_and_before_the_first_measured_request() {
    let sim = cache_sim(5);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags(SWEEP)
        .flags("--reset-prefix-cache each-run");
    run.ok();
    let calls = sim.control_calls();
    assert_eq!(calls.len(), 2, "one reset per point: {calls:?}");
    let truth = sim.truth();
    for (dir, call) in ["parallel_1_number_2", "parallel_2_number_2"]
        .iter()
        .zip(&calls)
    {
        assert_eq!(
            (call.path.as_str(), call.status),
            ("/reset_prefix_cache", 200)
        );
        assert_eq!(call.in_flight, 0, "the warmup has drained");
        let rows = cached_rows(&run.run_dir(dir).db());
        assert_eq!(
            rows[0].1, 0,
            "{dir}: the first measured request is cold: {rows:?}"
        );
        // The reset was answered before the point's first measured request was sent (one clock).
        assert!(call.at_s < rows[0].0, "{call:?} vs {rows:?}");
        let summary = run.run_dir(dir).summary();
        let reset = &summary["prefix_cache_reset"];
        assert_eq!(reset["done"], true);
        assert!(reset["endpoint"]
            .as_str()
            .unwrap()
            .ends_with("/reset_prefix_cache"));
        assert!(reset["counters_before"]["vllm:prefix_cache_hits_total"].is_number());
        let args = run.run_dir(dir).args();
        assert_eq!(args["reset_prefix_cache"], "each-run");
    }
    // …and after every request sent before it had ended: the connection test and the warmup request of
    // point 1 (2), then also point 1's two measured requests and point 2's connection test and warmup (6).
    for (call, before) in calls.iter().zip([2, 6]) {
        let chat = truth
            .iter()
            .filter(|t| t.path.ends_with("/chat/completions"));
        let received = chat.clone().filter(|t| t.received_s < call.at_s).count();
        let ended = chat
            .filter(|t| t.last_token_s.is_some_and(|e| e <= call.at_s))
            .count();
        assert_eq!((received, ended), (before, before), "{call:?}");
    }
    // evalscope's keys stay first (golden a_seed's order), llmperf's after them.
    let golden = include_str!("../../tests/fixtures/evalscope-golden/j_workload_trace/outputs/20261201_055853/trace/rate_-1.0_number_1000/benchmark_summary.json");
    let golden: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(golden).unwrap_or_default();
    let summary = run.run_dir("parallel_1_number_2").summary();
    let keys: Vec<&String> = summary.as_object().unwrap().keys().collect();
    let reset_at = keys
        .iter()
        .position(|k| *k == "prefix_cache_reset")
        .unwrap();
    for k in golden.keys() {
        assert!(keys.iter().position(|x| *x == k).unwrap() < reset_at, "{k}");
    }
}

#[test]
fn once_resets_before_the_first_point_only() {
    let sim = cache_sim(1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags(SWEEP)
        .flags("--reset-prefix-cache once --server-kind sglang");
    run.ok();
    let calls = sim.control_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].path, "/flush_cache");
    assert!(run
        .run_dir("parallel_2_number_2")
        .summary()
        .get("prefix_cache_reset")
        .is_none());
}

#[test]
fn a_failed_reset_stops_before_the_point_and_keeps_earlier_points() {
    // A stub without the endpoint: the first point's reset fails at once.
    let sim = cache_sim(1);
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags(SWEEP)
        .flags("--reset-prefix-cache each-run --server-kind llama.cpp");
    let err = run.fails(1);
    assert!(err.contains("/slots") && err.contains("404"), "{err}");
    assert!(
        !run.root().join("parallel_1_number_2").exists(),
        "nothing for the failed point"
    );
    assert!(sim.truth().iter().all(|t| !t.path.is_empty()));

    // Best effort: a warning, the failure recorded, both points run.
    let run = Run::at(&sim, "/v1/chat/completions").flags(SWEEP).flags(
        "--reset-prefix-cache each-run --server-kind llama.cpp --server-control-best-effort",
    );
    run.ok();
    let summary = run.run_dir("parallel_2_number_2").summary();
    assert_eq!(summary["prefix_cache_reset"]["done"], false);
    assert!(summary["prefix_cache_reset"]["error"]
        .as_str()
        .unwrap()
        .contains("404"));
}

#[test]
fn a_reset_that_fails_on_the_second_point_keeps_the_first() {
    // A vLLM without dev mode after the first point: the second reset answers 404.
    let resets = std::sync::atomic::AtomicUsize::new(0);
    let stub = StubServer::start(move |path, _| {
        if path == "/reset_prefix_cache" {
            if resets.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                return Reply::json("");
            }
            return Reply {
                status: 404,
                content_type: "application/json",
                body: br#"{"detail":"Not Found"}"#.to_vec(),
            };
        }
        Reply::json(
            r#"{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#,
        )
    });
    let run = Run::with_url(&stub.url("/v1/chat/completions"))
        .flags("--prompt hello --parallel 1 2 --number 2 2 --reset-prefix-cache each-run --server-kind vllm");
    let err = run.fails(1);
    assert!(
        err.contains("POST http://127.0.0.1:")
            && err.contains("/reset_prefix_cache")
            && err.contains("HTTP 404")
            && err.contains("Not Found")
            && err.contains("VLLM_SERVER_DEV_MODE=1"),
        "{err}"
    );
    assert_eq!(
        run.run_dir("parallel_1_number_2").rows().len(),
        2,
        "the first point is kept"
    );
    assert!(
        !run.root().join("parallel_2_number_2").exists(),
        "nothing for the failed point"
    );
    let sent_after: Vec<String> = stub
        .requests()
        .iter()
        .skip_while(|(p, _)| p != "/reset_prefix_cache")
        .skip(1)
        .skip_while(|(p, _)| p != "/reset_prefix_cache")
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(
        sent_after,
        vec!["/reset_prefix_cache".to_string()],
        "no load after the failed reset"
    );
}

#[test]
fn mock_prefix_cache_turns_the_simulator_cache_on_for_single_requests() {
    let run = Run::new().flags("--api mock --model m --prompt 'a b c d' --number 3 --mock-ttft-ms 1 --mock-itl-ms 0 --mock-prefix-cache on --reset-prefix-cache once");
    let dir = run.ok_dir("parallel_1_number_3");
    let rows = cached_rows(&dir.db());
    assert_eq!(
        rows.iter().map(|r| r.1).collect::<Vec<_>>()[..2],
        [0, rows[0].2 - 1],
        "{rows:?}"
    );
    let log = std::fs::read_to_string(run.root().join("benchmark.log")).unwrap_or_default();
    assert!(
        log.contains("POST /reset_prefix_cache"),
        "the simulator logs the call"
    );
    // Off by default: every request cold.
    let run = Run::new().flags(
        "--api mock --model m --prompt 'a b c d' --number 3 --mock-ttft-ms 1 --mock-itl-ms 0",
    );
    let rows = cached_rows(&run.ok_dir("parallel_1_number_3").db());
    assert!(rows.iter().all(|r| r.1 == 0), "{rows:?}");
    // Only with --api mock.
    let run =
        Run::new().flags("--url http://127.0.0.1:9/v1 --model m --prompt p --mock-prefix-cache on");
    assert!(run.fails(2).contains("--mock-prefix-cache"));
}

#[test]
fn control_flags_are_checked_before_anything_is_written() {
    for (flags, needle) in [
        ("--server-kind vllm", "--server-kind applies"),
        ("--server-control-best-effort", "--server-control-best-effort applies"),
        ("--server-profile-seconds 1", "add --server-profile"),
        ("--server-profile --server-profile-at-inflight 0", "at least 1"),
        ("--server-profile --server-profile-seconds 0", "--server-profile-seconds 0"),
        ("--reset-prefix-cache sometimes", "--reset-prefix-cache"),
        ("--dataset random --max-prompt-length 32 --min-prompt-length 32 --prefix-length 8 --target-cache-hit-rate 0.5 --tokenizer-path x", "--target-cache-hit-rate"),
        ("--target-cache-hit-rate 0.5", "--dataset random"),
        ("--dataset random --target-cache-hit-rate 1.5", "from 0 to 1"),
    ] {
        let run = Run::new().flags("--url http://127.0.0.1:9/v1 --model m").flags(if flags.contains("--dataset") { flags.to_string() } else { format!("--prompt p {flags}") }.as_str());
        let err = run.fails(2);
        assert!(err.contains(needle), "{flags}: {err}");
        assert_eq!(run.out_entries(), 0, "{flags}");
    }
}

#[test]
fn the_profiler_runs_from_n_in_flight_for_the_given_seconds() {
    // Requests of 1.5 s each, 8 at a time: 4 are in flight within moments; the window is 1 s long.
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(1500),
        itl: Duration::from_millis(1),
        output_tokens: 2,
        ..SimConfig::default()
    })
    .unwrap();
    let run = Run::at(&sim, "/v1/chat/completions").flags(
        "--prompt hello --parallel 8 --number 16 --server-profile --server-profile-at-inflight 4 --server-profile-seconds 1",
    );
    let dir = run.ok_dir("parallel_8_number_16");
    let calls = sim.control_calls();
    let paths: Vec<&str> = calls.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/start_profile", "/stop_profile"]);
    assert!(calls[0].in_flight >= 4, "{calls:?}");
    let gap = calls[1].at_s - calls[0].at_s;
    assert!((1.0..3.0).contains(&gap), "about 1 s apart: {gap}");
    let p = &dir.summary()["server_profile"];
    assert!(p["in_flight_at_start"].as_u64().unwrap() >= 4, "{p}");
    assert!(p["seconds"].as_f64().unwrap() >= 1.0, "{p}");
}

#[test]
fn a_failed_profiler_call_exits_1_naming_it() {
    let stub = StubServer::start(|path, _| {
        if path == "/start_profile" {
            return Reply {
                status: 404,
                content_type: "application/json",
                body: br#"{"detail":"Not Found"}"#.to_vec(),
            };
        }
        Reply::json(
            r#"{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#,
        )
    });
    let run = Run::with_url(&stub.url("/v1/chat/completions"))
        .flags("--prompt hello --number 2 --server-profile --server-kind vllm");
    let err = run.fails(1);
    assert!(
        err.contains("/start_profile")
            && err.contains("HTTP 404")
            && err.contains("VLLM_TORCH_PROFILER_DIR"),
        "{err}"
    );
    let run = Run::with_url(&stub.url("/v1/chat/completions"))
        .flags("--prompt hello --number 2 --server-profile --server-kind vllm --server-control-best-effort");
    let summary = run.ok_dir("parallel_1_number_2").summary();
    assert!(
        summary["server_profile"]["note"]
            .as_str()
            .unwrap()
            .contains("404"),
        "{summary}"
    );
}

/// The measured share of a `--target-cache-hit-rate F` run on the simulator with its cache on.
fn measured_share(f: &str, extra: &str) -> (f64, f64) {
    let run = Run::new()
        .flags("--api mock --model m --url http://127.0.0.1:1/v1/completions --dataset random")
        .flag("--tokenizer-path", crate::tokens::tokenizer_dir("qwen3"))
        .flags("--min-prompt-length 200 --max-prompt-length 400 --number 40 --parallel 1 --seed 7")
        .flags("--mock-ttft-ms 0 --mock-itl-ms 0 --mock-output-tokens 2 --mock-prefix-cache on")
        .flags(extra)
        .flag("--target-cache-hit-rate", f);
    let dir = run.ok_dir("parallel_1_number_40");
    // Recomputed from the stored rows, after the first 10 % (4 requests).
    let rows = cached_rows(&dir.db());
    let (c, p) = rows[4..]
        .iter()
        .fold((0, 0), |(c, p), r| (c + r.1, p + r.2));
    let from_rows = c as f64 / p as f64;
    let reported = &dir.summary()["prefix_cache_hit_rate"];
    assert_eq!(reported["expected"], f.parse::<f64>().unwrap());
    assert_eq!(reported["requests"], 36);
    let measured = reported["measured"].as_f64().unwrap();
    assert!(
        (measured - from_rows).abs() < 1e-9,
        "{measured} vs {from_rows}"
    );
    assert_eq!(
        dir.args()["target_cache_hit_rate"],
        f.parse::<f64>().unwrap()
    );
    (measured, from_rows)
}

#[test]
fn the_target_hit_rate_is_met_within_three_points() {
    for (f, want) in [("0.5", 0.5), ("0", 0.0), ("0.9", 0.9)] {
        let (measured, _) = measured_share(f, "--tokenize-prompt");
        assert!(
            (measured - want).abs() <= 0.03,
            "--target-cache-hit-rate {f}: measured {measured}"
        );
    }
}

#[test]
fn with_shards_only_shard_0_resets() {
    let sim = cache_sim(1);
    for shard in ["0/2", "1/2"] {
        Run::at(&sim, "/v1/chat/completions")
            .flags("--prompt hello --parallel 2 --number 4 --reset-prefix-cache each-run")
            .flag("--shard", shard)
            .flag("--name", format!("s{}", &shard[..1]))
            .ok();
        let resets = sim.control_calls().len();
        assert_eq!(resets, 1, "after shard {shard}: shard 0's one reset");
    }
}

#[test]
fn serve_mock_takes_mock_prefix_cache() {
    let (mut child, base) = serve_mock(&[
        "--ttft-ms",
        "0",
        "--itl-ms",
        "0",
        "--mock-prefix-cache",
        "on",
    ]);
    let run = Run::with_url(&format!("{base}/chat/completions"))
        .flags("--prompt 'a b c d' --number 2 --max-tokens 2 --reset-prefix-cache once");
    let rows = cached_rows(&run.ok_dir("parallel_1_number_2").db());
    assert_eq!((rows[0].1, rows[1].1 > 0), (0, true), "{rows:?}");
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}
