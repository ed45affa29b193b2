//! `--api openai_responses` (`openai_response`, `responses`) against the simulator's `/v1/responses`: the
//! bodies sent, the URL rules, the events read (TTFT, ITL, usage) and the failure events.

use crate::common::*;

/// `--model mock-model --number 3 --max-tokens 5` and `--api api` at `url` (none: no server).
fn run(api: &str, url: Option<&str>) -> Run {
    let run = Run::new().flags("--model mock-model --number 3 --max-tokens 5");
    let run = run.flag("--api", api);
    match url {
        Some(url) => run.flag("--url", url),
        None => run,
    }
}

#[test]
fn responses_bodies_events_and_url_rewrite() {
    // Slow enough that every delta is its own read: 20 ms to the first token, 10 ms between tokens.
    let sim = timed_sim(20, 10);
    // A chat URL is rewritten to `…/responses`, as evalscope does.
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let run = run("openai_responses", Some(&url))
        .flags(r#"--prompt 'hello there' --seed 3 --top-p 0.5 --extra-args '{"store": false}'"#);
    run.ok();
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
    let dir = run.run_dir("parallel_1_number_3");
    let rows = dir.rows();
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
    let summary = dir.summary();
    assert_eq!(summary["Success Requests"], 3);
}

#[test]
fn responses_alias_appends_the_endpoint_and_reads_whole_bodies() {
    let sim = fast_sim();
    let url = format!("{}/v1", sim.base_url());
    let run =
        run("responses", Some(&url)).flags("--prompt 'a b c' --no-stream --apply-chat-template");
    run.ok();
    let reqs = sim.requests();
    assert!(reqs.iter().all(|(path, _, _)| path == "/v1/responses"));
    let body: serde_json::Value = serde_json::from_str(&reqs[1].1).unwrap();
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["input"],
        serde_json::json!([{"role": "user", "content": "a b c"}])
    );
    let rows = run.run_dir("parallel_1_number_3").rows();
    assert!(rows.iter().all(|r| r.success && !r.is_stream));
    assert!(rows
        .iter()
        .all(|r| r.prompt_tokens == Some(3) && r.completion_tokens == Some(5)));
}

#[test]
fn responses_failure_events_fail_the_request() {
    let sim = fast_sim();
    let url = format!("{}/v1/responses", sim.base_url());
    let run = run("openai_response", Some(&url))
        .flags("--prompt x --no-test-connection --headers x-llmperf-fault=error-event");
    let output = run.output();
    assert!(output.status.code().is_some(), "exits, not killed");
    let rows = run.run_dir("parallel_1_number_3").rows();
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
    let bad = run("responses", None).flags("--tokenize-prompt --tokenizer-path x --prompt p");
    let err = bad.fails(2);
    assert!(
        err.contains("--tokenize-prompt") && err.contains("Responses API"),
        "{err}"
    );
    assert_eq!(bad.out_entries(), 0, "no output folder");
    for api in ["custom", "dashscope", "systemone"] {
        let bad = run(api, None).flags("--prompt p");
        let err = bad.fails(2);
        assert!(
            err.contains("--query-template") && err.contains("openai_responses"),
            "{api}: {err}"
        );
        assert_eq!(bad.out_entries(), 0, "{api}: no output folder");
    }
}
