//! `--server-metrics` against the real llama.cpp server (its `/metrics` is on): the server's own prompt and
//! generation token counters grow by exactly the run's `usage` sums.

use serde_json::Value;

use crate::common::*;
use crate::server::RealServer;

#[test]
fn llama_cpp_token_counters_equal_the_runs_usage() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server.run()
        .flags("--prompt 'Tell me a short story about a cat' --parallel 2 --number 6 --max-tokens 8 --server-metrics --server-metrics-interval 0.2")
        .ok_dir("parallel_2_number_6");
    let rows = run.rows();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.success));
    let prompt: i64 = rows.iter().map(|r| r.prompt_tokens.unwrap()).sum();
    let completion: i64 = rows.iter().map(|r| r.completion_tokens.unwrap()).sum();
    let summary = run.summary();
    // llama.cpp counts cached prompt tokens apart from processed ones; together they are usage.prompt_tokens.
    assert_eq!(summary["Server Prompt Tokens"], Value::from(prompt));
    assert_eq!(summary["Server Generation Tokens"], Value::from(completion));
    let file = json_file(&run.join("server_metrics.json"));
    let counters = &file["endpoints"][0]["counters"];
    assert_eq!(
        counters["llamacpp:tokens_predicted_total"]["delta"],
        Value::from(completion)
    );
    let processed = counters["llamacpp:prompt_tokens_total"]["delta"]
        .as_i64()
        .unwrap();
    let cached = counters["llamacpp:prompt_tokens_cached_total"]["delta"]
        .as_i64()
        .unwrap();
    assert_eq!(processed + cached, prompt);
    let max_running = summary["Server Max Running Requests"].as_f64().unwrap();
    assert!((0.0..=2.0).contains(&max_running), "{max_running}");
}
