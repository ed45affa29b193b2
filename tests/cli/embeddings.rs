//! `--api openai_embedding` / `openai_rerank` against the simulator: bodies, no connection test, token
//! counts, and evalscope's input-only summary and percentile keys (golden `f_embedding`).

use serde_json::Value;

use crate::common::*;
use crate::tokens::{count, raw_tokenizer, shared_dir, tokenizer_dir};

fn golden_embedding_file(name: &str) -> Value {
    let dir = shared_dir().join("reference/evalscope-golden/f_embedding/outputs");
    let stamp = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    json_file(&stamp.join("embed/parallel_2_number_20").join(name))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn random_embedding_run_has_evalscope_keys_and_exact_inputs() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    // The f_embedding golden command, against the simulator.
    ok(&llmperf(
        out.path(),
        &[
            "--url",
            &format!("{}/v1", sim.base_url()),
            "--model",
            "mock-embed",
            "--api",
            "openai_embedding",
            "--tokenizer-path",
            &tokenizer_dir("qwen3"),
            "--dataset",
            "random_embedding",
            "--min-prompt-length",
            "64",
            "--max-prompt-length",
            "128",
            "--parallel",
            "2",
            "--number",
            "20",
            "--seed",
            "42",
            "--name",
            "embed",
        ],
    ));
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 20, "no connection test for embeddings");
    let tok = raw_tokenizer("qwen3");
    for (path, body, _) in &reqs {
        assert_eq!(path, "/v1/embeddings");
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(keys(&v), ["input", "model"]);
        let n = count(&tok, v["input"].as_str().unwrap());
        assert!((64..=128).contains(&n), "{n}");
    }
    let run = run_root(out.path(), "embed").join("parallel_2_number_20");
    let summary = json_file(&run.join("benchmark_summary.json"));
    let golden = golden_embedding_file("benchmark_summary.json");
    assert_eq!(keys(&summary)[..keys(&golden).len()], keys(&golden)[..]);
    assert!(summary["Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
    assert_eq!(summary["Avg Output Tokens"], 0.0);
    assert!(summary["Wall Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
    let pct = json_file(&run.join("benchmark_percentile.json"));
    let golden = golden_embedding_file("benchmark_percentile.json");
    assert_eq!(keys(&pct[0]), keys(&golden[0]));
    assert_eq!(pct.as_array().unwrap().len(), 11);
    let stdout_report =
        std::fs::read_to_string(run_root(out.path(), "embed").join("performance_summary.txt"))
            .unwrap();
    assert!(stdout_report.contains("Inp.TPS"), "{stdout_report}");
}

#[test]
fn embedding_batches_from_a_file() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("texts.txt");
    std::fs::write(&data, "alpha beta\ngamma\ndelta epsilon zeta\n").unwrap();
    ok(&llmperf(
        out.path().join("o").as_path(),
        &[
            "--url",
            &format!("{}/v1/embeddings", sim.base_url()),
            "--model",
            "e",
            "--api",
            "embedding",
            "--dataset",
            "embedding_batch",
            "--dataset-path",
            data.to_str().unwrap(),
            "--extra-args",
            r#"{"batch_size": 2}"#,
            "--number",
            "3",
        ],
    ));
    let bodies: Vec<String> = sim.requests().into_iter().map(|r| r.1).collect();
    assert_eq!(
        bodies,
        [
            r#"{"input": ["alpha beta", "gamma"], "model": "e", "batch_size": 2}"#,
            r#"{"input": ["delta epsilon zeta"], "model": "e", "batch_size": 2}"#,
            r#"{"input": ["alpha beta", "gamma"], "model": "e", "batch_size": 2}"#,
        ]
    );
    let root = run_root(out.path().join("o").as_path(), "e");
    let rows = rows(&root.join("parallel_1_number_3/benchmark_data.db"));
    // The simulator counts words: 3, then 3.
    assert_eq!(
        rows.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(),
        [Some(3), Some(3), Some(3)]
    );
}

#[test]
fn rerank_runs_count_tokens_from_total_tokens() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    ok(&llmperf(
        out.path(),
        &[
            "--url",
            &format!("{}/v1", sim.base_url()),
            "--model",
            "rr",
            "--api",
            "openai_rerank",
            "--tokenizer-path",
            &tokenizer_dir("smollm2-135m-instruct"),
            "--dataset",
            "random_rerank",
            "--min-prompt-length",
            "10",
            "--max-prompt-length",
            "20",
            "--extra-args",
            r#"{"num_documents": 5, "document_length_ratio": 3}"#,
            "--number",
            "6",
            "--parallel",
            "2",
        ],
    ));
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 6, "no connection test for rerank");
    let root = run_root(out.path(), "rr");
    for row in rows(&root.join("parallel_2_number_6/benchmark_data.db")) {
        let v: Value = serde_json::from_str(&row.request).unwrap();
        assert_eq!(
            keys(&v),
            [
                "query",
                "documents",
                "model",
                "num_documents",
                "document_length_ratio"
            ]
        );
        let docs = v["documents"].as_array().unwrap();
        assert_eq!(docs.len(), 5);
        // The simulator reports total_tokens = words of the query and documents.
        let words = |s: &Value| s.as_str().unwrap().split_whitespace().count() as i64;
        let want = words(&v["query"]) + docs.iter().map(words).sum::<i64>();
        assert!(row.success);
        assert_eq!(row.prompt_tokens, Some(want));
        assert_eq!(row.completion_tokens, Some(0));
    }
    let run = root.join("parallel_2_number_6");
    let pct = json_file(&run.join("benchmark_percentile.json"));
    assert_eq!(
        keys(&pct[0]),
        [
            "Percentiles",
            "Latency (s)",
            "Input tokens",
            "Input (tok/s)"
        ]
    );
    let summary = json_file(&run.join("benchmark_summary.json"));
    assert!(summary["Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
}

#[test]
fn rerank_file_dataset_sends_query_and_documents() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("rr.jsonl");
    std::fs::write(
        &data,
        "{\"query\": \"what is rust\", \"documents\": [\"a language\", \"a fungus\"]}\n",
    )
    .unwrap();
    ok(&llmperf(
        out.path().join("o").as_path(),
        &[
            "--url",
            &format!("{}/v1/rerank", sim.base_url()),
            "--model",
            "rr",
            "--api",
            "rerank",
            "--dataset",
            "rerank",
            "--dataset-path",
            data.to_str().unwrap(),
            "--number",
            "2",
        ],
    ));
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].0, "/v1/rerank");
    assert_eq!(
        reqs[0].1,
        r#"{"query": "what is rust", "documents": ["a language", "a fungus"], "model": "rr"}"#
    );
}
