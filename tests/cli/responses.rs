//! `--api openai_responses` (`openai_response`, `responses`) against the simulator's `/v1/responses`: the
//! bodies sent, the URL rules, the events read (TTFT, ITL, usage) and the failure events.

use crate::common::*;

fn run(out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--model",
        "mock-model",
        "--number",
        "3",
        "--max-tokens",
        "5",
    ];
    args.extend_from_slice(extra);
    llmperf(out, &args)
}

/// A simulator slow enough that every delta is its own read: 20 ms to the first token, 10 ms between tokens.
fn paced_sim() -> llmperf::sim::SimServer {
    llmperf::sim::SimServer::start(llmperf::sim::SimConfig {
        ttft: std::time::Duration::from_millis(20),
        itl: std::time::Duration::from_millis(10),
        ..llmperf::sim::SimConfig::default()
    })
    .expect("simulator starts")
}

#[test]
fn responses_bodies_events_and_url_rewrite() {
    let sim = paced_sim();
    let out = tempfile::tempdir().unwrap();
    // A chat URL is rewritten to `…/responses`, as evalscope does.
    let url = format!("{}/v1/chat/completions", sim.base_url());
    ok(&run(
        out.path(),
        &[
            "--api",
            "openai_responses",
            "--url",
            &url,
            "--prompt",
            "hello there",
            "--seed",
            "3",
            "--top-p",
            "0.5",
            "--extra-args",
            r#"{"store": false}"#,
        ],
    ));
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 4, "connection test + 3 requests");
    assert!(reqs.iter().all(|(path, _, _)| path == "/v1/responses"));
    // evalscope's key order; no stream_options, no seed (the Responses plugin sends neither); the prompt is
    // plain text, as the chat-template default is decided after the URL became `…/responses`.
    let expected = r#"{"input": "hello there", "model": "mock-model", "max_output_tokens": 5, "stream": true, "temperature": 0.0, "top_p": 0.5, "store": false}"#;
    for (_, body, _) in &reqs[1..] {
        assert_eq!(body, expected);
    }
    let probe: serde_json::Value = serde_json::from_str(&reqs[0].1).unwrap();
    assert_eq!(
        probe["max_output_tokens"], 5,
        "the probe asks for at most the run's max"
    );
    let root = run_root(out.path(), "mock-model");
    let rows = rows(&root.join("parallel_1_number_3/benchmark_data.db"));
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(r.success, "{:?}", r.error);
        assert!(r.is_stream);
        assert_eq!(r.request, expected);
        assert_eq!(
            r.prompt_tokens,
            Some(2),
            "input tokens from response.completed"
        );
        assert_eq!(
            r.completion_tokens,
            Some(5),
            "output tokens from response.completed"
        );
        assert_eq!(r.itl.len(), 4, "one ITL per output delta after the first");
        let ttft = r.ttft.unwrap();
        assert!((0.019..r.latency.unwrap()).contains(&ttft), "{r:?}");
        // The last delta cannot arrive before its due time (20 ms + 4 × 10 ms): the chunks are timed by
        // the deltas, not by the stream's other events.
        let last_delta_s = ttft + r.itl.iter().sum::<f64>();
        assert!(last_delta_s >= 0.059, "{r:?}");
    }
    let summary = json_file(&root.join("parallel_1_number_3/benchmark_summary.json"));
    assert_eq!(summary["Success Requests"], 3);
}

#[test]
fn responses_alias_appends_the_endpoint_and_reads_whole_bodies() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", sim.base_url());
    ok(&run(
        out.path(),
        &[
            "--api",
            "responses",
            "--url",
            &url,
            "--prompt",
            "a b c",
            "--no-stream",
            "--apply-chat-template",
        ],
    ));
    let reqs = sim.requests();
    assert!(reqs.iter().all(|(path, _, _)| path == "/v1/responses"));
    let body: serde_json::Value = serde_json::from_str(&reqs[1].1).unwrap();
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["input"],
        serde_json::json!([{"role": "user", "content": "a b c"}])
    );
    let root = run_root(out.path(), "mock-model");
    let rows = rows(&root.join("parallel_1_number_3/benchmark_data.db"));
    assert!(rows.iter().all(|r| r.success && !r.is_stream));
    assert!(rows
        .iter()
        .all(|r| r.prompt_tokens == Some(3) && r.completion_tokens == Some(5)));
}

#[test]
fn responses_failure_events_fail_the_request() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/responses", sim.base_url());
    let output = run(
        out.path(),
        &[
            "--api",
            "openai_response",
            "--url",
            &url,
            "--prompt",
            "x",
            "--no-test-connection",
            "--headers",
            "x-llmperf-fault=error-event",
        ],
    );
    assert!(output.status.code().is_some(), "exits, not killed");
    let root = run_root(out.path(), "mock-model");
    let rows = rows(&root.join("parallel_1_number_3/benchmark_data.db"));
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(!r.success);
        assert!(
            r.error
                .as_deref()
                .unwrap_or("")
                .contains("simulated in-band error"),
            "{:?}",
            r.error
        );
    }
}

#[test]
fn responses_rejects_tokenize_prompt_and_custom_api_names_the_alternatives() {
    let out = tempfile::tempdir().unwrap();
    let o = run(
        out.path(),
        &[
            "--api",
            "responses",
            "--tokenize-prompt",
            "--tokenizer-path",
            "x",
            "--prompt",
            "p",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--tokenize-prompt") && err.contains("Responses API"),
        "{err}"
    );
    for api in ["custom", "dashscope", "systemone"] {
        let o = run(out.path(), &["--api", api, "--prompt", "p"]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--query-template") && err.contains("openai_responses"),
            "{api}: {err}"
        );
    }
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "no output folder"
    );
}
