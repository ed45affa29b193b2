//! The seed recipes in `examples/*.sh` run against the built-in simulator, so they never rot.

use std::path::Path;
use std::process::Command;

use crate::common::*;

use crate::tokens::shared_dir as shared;

fn script(name: &str, out: &Path, env: &[(&str, &str)]) -> std::process::Output {
    script_with_args(name, &[], out, env)
}

fn script_with_args(
    name: &str,
    args: &[&str],
    out: &Path,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name),
    )
    .args(args)
    .env("LLMPERF", env!("CARGO_BIN_EXE_llmperf"))
    .env("HF_HUB_OFFLINE", "1")
    .env("OUTPUTS_DIR", out)
    .env("EXTRA_FLAGS", "--sleep-interval 0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

/// Every `benchmark_summary.json` under `root`.
fn summaries(root: &Path) -> Vec<serde_json::Value> {
    files_under(root)
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "benchmark_summary.json"))
        .map(|p| json_file(p))
        .collect()
}

#[test]
fn vllm_baseline_recipe() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let qwen3 = shared().join("tokenizers/qwen3");
    let o = script(
        "vllm_baseline.sh",
        out.path(),
        &[
            ("URL", &format!("{}/v1/chat/completions", sim.base_url())),
            ("TOKENIZER", qwen3.to_str().unwrap()),
            ("INPUT_TOKENS", "64"),
            ("OUTPUT_TOKENS", "8"),
            ("NUMBER", "3"),
            ("WARMUP", "1"),
        ],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["Success Requests"], 3);
    assert_eq!(s[0]["Avg Output Tokens"], 8.0);
    let body: serde_json::Value = serde_json::from_str(&sim.requests().last().unwrap().1).unwrap();
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
    assert_eq!(body["ignore_eos"], true);
}

#[test]
fn xllm_recipe_sweeps_with_exact_token_prompts_and_validates_its_settings() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let qwen3 = shared().join("tokenizers/qwen3");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let env = [
        ("URL", url.as_str()),
        ("TOKENIZER", qwen3.to_str().unwrap()),
        ("INPUT_TOKENS", "32"),
        ("OUTPUT_TOKENS", "4"),
        ("PREFIX_TOKENS", "16"),
        ("TOKENIZE_PROMPT", "true"),
        ("PARALLELS", "1 2"),
        ("NUMBERS", "2 4"),
        ("WARMUP", "1"),
    ];
    ok(&script("xllm_perf.sh", out.path(), &env));
    let s = summaries(out.path());
    assert_eq!(s.len(), 2, "one run per (parallel, number) pair");
    let mut lengths = Vec::new();
    for (path, body, _) in sim.requests() {
        assert_eq!(
            path, "/v1/completions",
            "--tokenize-prompt rewrites the endpoint"
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        lengths.push(v["prompt"].as_array().expect("token ids").len());
    }
    // Per run: one connection test ("hello" as token ids), one warmup request, then the measured ones.
    let exact = lengths.iter().filter(|n| **n == 48).count();
    assert_eq!(
        exact,
        (1 + 2) + (1 + 4),
        "prefix 16 + input 32 token ids: {lengths:?}"
    );
    assert_eq!(lengths.len(), exact + 2, "{lengths:?}");
    for (k, v, msg) in [
        (
            "INPUT_TOKENS",
            "abc",
            "INPUT_TOKENS must be a positive integer",
        ),
        (
            "TOKENIZE_PROMPT",
            "yes",
            "TOKENIZE_PROMPT must be true or false",
        ),
        (
            "PREFIX_TOKENS",
            "-1",
            "PREFIX_TOKENS must be a non-negative integer",
        ),
    ] {
        let o = script("xllm_perf.sh", out.path(), &[(k, v)]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(msg), "{k}={v}");
    }
}

#[test]
fn evalscope_examples_page_runs_every_example() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let smol = shared().join("tokenizers/smollm2-135m-instruct");
    let o = script_with_args(
        "evalscope_examples.sh",
        &["all"],
        out.path(),
        &[
            ("URL", &format!("{}/v1", sim.base_url())),
            ("TOKENIZER", smol.to_str().unwrap()),
            ("NUMBER", "2"),
        ],
    );
    ok(&o);
    // Ten runs: prompt (2), query_template, random, random_vl, embedding, rerank, open_loop (2), debug.
    let s = summaries(out.path());
    assert_eq!(s.len(), 10, "{}", stderr(&o));
    assert!(s.iter().all(|s| s["Failed Requests"] == 0));
    let paths: std::collections::BTreeSet<String> =
        sim.requests().into_iter().map(|r| r.0).collect();
    for p in ["/v1/chat/completions", "/v1/embeddings"] {
        assert!(paths.contains(p), "{paths:?}");
    }
    assert!(paths.iter().any(|p| p.contains("rerank")), "{paths:?}");
}

#[test]
fn multi_turn_recipe_runs_conversations_with_sessions() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let qwen3 = shared().join("tokenizers/qwen3");
    let o = script(
        "multi_turn.sh",
        out.path(),
        &[
            ("URL", &format!("{}/v1/chat/completions", sim.base_url())),
            ("TOKENIZER", qwen3.to_str().unwrap()),
            ("MIN_TURNS", "2"),
            ("MAX_TURNS", "2"),
            ("MIN_INPUT", "16"),
            ("MAX_INPUT", "32"),
            ("OUTPUT_TOKENS", "4"),
            ("PARALLEL", "2"),
            ("CONVERSATIONS", "3"),
            ("THINK_S", "0.01"),
        ],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s.len(), 1);
    assert_eq!(
        s[0]["Total Requests"], 6,
        "three conversations of two turns"
    );
    assert_eq!(s[0]["Avg Turns/Request"], 1.5);
    let sessions = sim
        .requests()
        .iter()
        .filter(|(_, _, h)| h.iter().any(|(k, _)| k == "x-session-id"))
        .count();
    assert_eq!(sessions, 6, "every turn carries its conversation's id");
}

#[test]
fn trace_replay_recipe_replays_a_trace() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let trace = out.path().join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"body\": {\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}, \"timestamp\": 5, \"completion_tokens\": 3, \"request_id\": \"a\"}\n\
         {\"body\": {\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"yo\"}]}, \"timestamp\": \"1970-01-01T00:00:05.2Z\", \"completion_tokens\": 2}\n",
    )
    .unwrap();
    let o = script(
        "trace_replay.sh",
        out.path(),
        &[
            ("URL", &format!("{}/v1/chat/completions", sim.base_url())),
            ("TRACE", trace.to_str().unwrap()),
            ("SPEED", "4"),
            ("MODEL", "served"),
        ],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["Total Requests"], 2);
    assert_eq!(
        s[0]["Avg Output Tokens"], 2.5,
        "match_output_length forces 3 and 2 tokens"
    );
    let models: Vec<String> = sim
        .requests()
        .iter()
        .skip(1)
        .map(|(_, b, _)| serde_json::from_str::<serde_json::Value>(b).unwrap()["model"].to_string())
        .collect();
    assert_eq!(models, vec!["\"served\"", "\"served\""]);
    let o = script("trace_replay.sh", out.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "TRACE is required");
}

#[test]
fn mock_mode_runs_offline_with_the_shipped_tokenizer_and_exact_prompt_lengths() {
    // No TOKENIZER and no hub (HF_HUB_OFFLINE=1): MOCK=1 uses examples/tokenizers/smollm2-135m-instruct,
    // and the simulator counts the prompts with it, chat template included.
    let out = tempfile::tempdir().unwrap();
    let o = script(
        "vllm_baseline.sh",
        out.path(),
        &[
            ("MOCK", "1"),
            ("INPUT_TOKENS", "32"),
            ("OUTPUT_TOKENS", "4"),
            ("NUMBER", "3"),
            ("WARMUP", "1"),
            (
                "EXTRA_FLAGS",
                "--sleep-interval 0 --mock-ttft-ms 1 --mock-itl-ms 1",
            ),
        ],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["Avg Input Tokens"], 32.0, "{}", stderr(&o));
    assert_eq!(s[0]["Exact Input Tokens (%)"], 100.0);
    assert!(
        !stderr(&o).contains("counts prompts differently"),
        "{}",
        stderr(&o)
    );
    let args = files_under(out.path())
        .into_iter()
        .find(|p| p.ends_with("benchmark_args.json"))
        .map(|p| json_file(&p))
        .unwrap();
    assert!(
        args["tokenizer_path"]
            .as_str()
            .unwrap()
            .ends_with("examples/tokenizers/smollm2-135m-instruct"),
        "{args}"
    );
}

#[test]
fn extra_args_merge_into_the_recipes_own_and_a_second_extra_args_is_flagged() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let smol = shared().join("tokenizers/smollm2-135m-instruct");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let env = [
        ("URL", url.as_str()),
        ("TOKENIZER", smol.to_str().unwrap()),
        ("INPUT_TOKENS", "48"),
        ("OUTPUT_TOKENS", "4"),
        ("NUMBER", "2"),
        ("WARMUP", "0"),
        ("EXTRA_ARGS", r#"{"cache_prompt": false}"#),
    ];
    ok(&script("vllm_baseline.sh", out.path(), &env));
    let body: serde_json::Value = serde_json::from_str(&sim.requests().last().unwrap().1).unwrap();
    assert_eq!(body["ignore_eos"], true, "{body}");
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
    assert_eq!(body["cache_prompt"], false);
    // The README's earlier advice, --extra-args in EXTRA_FLAGS, replaces the recipe's: said so.
    let mut env = env.to_vec();
    env.push((
        "EXTRA_FLAGS",
        r#"--sleep-interval 0 --extra-args {"cache_prompt":false}"#,
    ));
    env.retain(|(k, _)| *k != "EXTRA_ARGS");
    let o = script("vllm_baseline.sh", out.path(), &env);
    ok(&o);
    assert!(
        stderr(&o).contains("WARN: --extra-args was given 2 times: only the last one is used"),
        "{}",
        stderr(&o)
    );
    let o = script(
        "vllm_baseline.sh",
        out.path(),
        &[("URL", url.as_str()), ("EXTRA_ARGS", "cache_prompt=false")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("EXTRA_ARGS must be a JSON object"));
}

#[test]
fn the_examples_page_runs_every_example_and_fails_when_one_fails() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let smol = shared().join("tokenizers/smollm2-135m-instruct");
    // Every request answered 500: each example's llmperf exits 4; the script still runs both, then fails.
    let o = script_with_args(
        "evalscope_examples.sh",
        &["prompt", "random"],
        out.path(),
        &[
            ("URL", &format!("{}/v1", sim.base_url())),
            ("TOKENIZER", smol.to_str().unwrap()),
            ("NUMBER", "2"),
            (
                "EXTRA_FLAGS",
                "--sleep-interval 0 --no-test-connection --headers x-llmperf-fault=http-500",
            ),
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("== random"), "the second example ran: {err}");
    assert!(
        err.contains("2 of 2 examples failed: prompt (exit 4) random (exit 4)"),
        "{err}"
    );
    assert_eq!(
        summaries(out.path()).len(),
        3,
        "both examples wrote their runs"
    );
}

#[test]
fn ci_regression_gate_fails_a_slower_candidate_and_passes_an_equal_one() {
    let settings = |new_ttft: &'static str| {
        [
            ("NUMBER", "200"),
            ("PARALLEL", "10"),
            ("MAX_TOKENS", "3"),
            ("BASE_TTFT_MS", "60"),
            ("NEW_TTFT_MS", new_ttft),
            ("GATES", "p50_ttft:+20% avg_ttft:+20% rps:-50%"),
        ]
    };
    // The candidate's TTFT doubled: both TTFT gates fail (exit 3); one run each leaves rps inconclusive.
    let out = tempfile::tempdir().unwrap();
    let o = script("ci_regression_gate.sh", out.path(), &settings("120"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{}", stderr(&o));
    assert!(
        stdout.contains("### ❌ llmperf compare: 2 gated regressions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ci_regression_gate: REGRESSION"),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"1\""),
        "{junit}"
    );
    let s = summaries(&out.path().join("candidate"));
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["Success Requests"], 200);
    // The same setup twice: no gated regression (exit 0).
    let same = tempfile::tempdir().unwrap();
    let o = script("ci_regression_gate.sh", same.path(), &settings("60"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", stderr(&o));
    assert!(
        stdout.contains("ci_regression_gate: no gated regression"),
        "{stdout}"
    );
    // Results already there: refused before anything runs.
    let o = script("ci_regression_gate.sh", same.path(), &settings("60"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already holds"), "{}", stderr(&o));
}

#[test]
fn tool_calling_recipe_reports_tool_call_and_schema_validity() {
    let out = tempfile::tempdir().unwrap();
    let o = script(
        "tool_calling.sh",
        out.path(),
        &[("MOCK", "1"), ("NUMBER", "8"), ("INVALID_RATE", "0")],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s.len(), 1);
    // Three tool rows and one JSON row, cycled over 8 requests.
    assert_eq!(s[0]["Tool Requests"], 6);
    assert_eq!(s[0]["Tool Call Rate (%)"], 100.0);
    assert_eq!(s[0]["Valid Tool Calls (%)"], 100.0);
    assert_eq!(s[0]["Schema Requests"], 2);
    assert_eq!(s[0]["Schema Valid (%)"], 100.0);

    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let bfcl =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bfcl/BFCL_v3_sample.json");
    let o = script(
        "tool_calling.sh",
        out.path(),
        &[
            ("URL", &format!("{}/v1/chat/completions", sim.base_url())),
            ("BFCL", bfcl.to_str().unwrap()),
            ("NUMBER", "4"),
        ],
    );
    ok(&o);
    let s = summaries(out.path());
    assert_eq!(s[0]["Tool Requests"], 4);
    assert_eq!(s[0]["Valid Tool Calls (%)"], 100.0);
}
