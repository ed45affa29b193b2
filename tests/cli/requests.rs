//! What goes over the wire: bodies byte for byte, headers, the connection test, datasets.

use crate::common::*;

#[test]
fn prompt_bodies_are_evalscope_bytes_and_reused() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .model("mock-model")
        .flags(r#"--prompt 'hello there' --number 3 --max-tokens 5 --seed 1 --extra-args '{"ignore_eos": true}'"#)
        .flags("--api-key sk-test-123 --headers X-Foo=bar");
    run.ok();
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 4, "connection test + 3 requests");
    let expected = r#"{"messages": [{"role": "user", "content": "hello there"}], "model": "mock-model", "max_tokens": 5, "seed": 1, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0, "ignore_eos": true}"#;
    for (path, body, headers) in &reqs[1..] {
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(body, expected);
        let get = |k: &str| {
            headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("authorization"), Some("Bearer sk-test-123"));
        assert_eq!(get("x-foo"), Some("bar"));
        assert_eq!(get("content-type"), Some("application/json"));
    }
    // The connection test has the run's shape with a small max_tokens.
    let test: serde_json::Value = serde_json::from_str(&reqs[0].1).unwrap();
    assert_eq!(test["messages"][0]["content"], "hello");
    assert_eq!(test["max_tokens"], 4);
    // The stored request is the sent one.
    let rows = run.run_dir("parallel_1_number_3").rows();
    assert!(rows.iter().all(|r| r.request == expected));
}

#[test]
fn line_by_line_dataset_and_completions_endpoint() {
    let sim = fast_sim();
    Run::at(&sim, "/v1/completions")
        .flags("--dataset line_by_line")
        .input(
            "--dataset-path",
            "prompts.txt",
            "first prompt\n[{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"}]\n{\"prompt\": \"body\", \"max_tokens\": 3}\n\n",
        )
        .flags("--number 4 --max-tokens 6 --no-test-connection")
        .ok();
    let bodies: Vec<String> = sim.requests().into_iter().map(|r| r.1).collect();
    assert_eq!(bodies.len(), 4);
    assert_eq!(
        bodies[0],
        r#"{"prompt": "first prompt", "model": "m", "max_tokens": 6, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0}"#
    );
    assert!(bodies[1].starts_with(r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "model": "m""#));
    assert_eq!(
        bodies[2],
        r#"{"prompt": "body", "max_tokens": 3, "model": "m", "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0}"#
    );
    assert_eq!(bodies[3], bodies[0], "the dataset is cycled");
}

#[test]
fn max_tokens_range_and_seed_make_identical_runs() {
    let run = || {
        let sim = fast_sim();
        Run::against(&sim)
            .flags("--dataset openqa")
            .input(
                "--dataset-path",
                "q.jsonl",
                "{\"question\": \"a\"}\n{\"question\": \"b\"}\n",
            )
            .flags("--number 12 --max-tokens 2 9 --seed 5 --no-test-connection")
            .ok();
        let mut bodies: Vec<String> = sim.requests().into_iter().map(|r| r.1).collect();
        bodies.sort();
        bodies
    };
    let a = run();
    assert_eq!(a, run(), "same seed, same bodies");
    let maxes: std::collections::BTreeSet<u64> = a
        .iter()
        .map(|b| {
            serde_json::from_str::<serde_json::Value>(b).unwrap()["max_tokens"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(
        maxes.len() > 1 && maxes.iter().all(|m| (2..=9).contains(m)),
        "{maxes:?}"
    );
}
