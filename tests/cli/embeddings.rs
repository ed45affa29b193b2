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
    // The f_embedding golden command, against the simulator.
    let run = Run::against(&sim)
        .model("mock-embed")
        .flags("--api openai_embedding")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags("--dataset random_embedding --min-prompt-length 64 --max-prompt-length 128 --parallel 2 --number 20 --seed 42 --name embed");
    run.ok();
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
    let dir = run.run_dir("parallel_2_number_20");
    let summary = dir.summary();
    let golden = golden_embedding_file("benchmark_summary.json");
    assert_eq!(keys(&summary)[..keys(&golden).len()], keys(&golden)[..]);
    assert!(summary["Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
    assert_eq!(summary["Avg Output Tokens"], 0.0);
    assert!(summary["Wall Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
    let pct = dir.percentiles();
    let golden = golden_embedding_file("benchmark_percentile.json");
    assert_eq!(keys(&pct[0]), keys(&golden[0]));
    assert_eq!(pct.as_array().unwrap().len(), 11);
    let stdout_report =
        std::fs::read_to_string(run.root().join("performance_summary.txt")).unwrap();
    assert!(stdout_report.contains("Inp.TPS"), "{stdout_report}");
}

#[test]
fn embedding_batches_from_a_file() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/embeddings")
        .model("e")
        .flags("--api embedding --dataset embedding_batch")
        .input(
            "--dataset-path",
            "texts.txt",
            "alpha beta\ngamma\ndelta epsilon zeta\n",
        )
        .flags(r#"--extra-args '{"batch_size": 2}' --number 3"#);
    run.ok();
    let bodies: Vec<String> = sim.requests().into_iter().map(|r| r.1).collect();
    assert_eq!(
        bodies,
        [
            r#"{"input": ["alpha beta", "gamma"], "model": "e", "batch_size": 2}"#,
            r#"{"input": ["delta epsilon zeta"], "model": "e", "batch_size": 2}"#,
            r#"{"input": ["alpha beta", "gamma"], "model": "e", "batch_size": 2}"#,
        ]
    );
    let rows = run.run_dir("parallel_1_number_3").rows();
    // The simulator counts words: 3, then 3.
    assert_eq!(
        rows.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(),
        [Some(3), Some(3), Some(3)]
    );
}

#[test]
fn rerank_runs_count_tokens_from_total_tokens() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .model("rr")
        .flags("--api openai_rerank")
        .flag("--tokenizer-path", tokenizer_dir("smollm2-135m-instruct"))
        .flags(r#"--dataset random_rerank --min-prompt-length 10 --max-prompt-length 20 --extra-args '{"num_documents": 5, "document_length_ratio": 3}' --number 6 --parallel 2"#);
    run.ok();
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 6, "no connection test for rerank");
    let dir = run.run_dir("parallel_2_number_6");
    for row in dir.rows() {
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
    let pct = dir.percentiles();
    assert_eq!(
        keys(&pct[0]),
        [
            "Percentiles",
            "Latency (s)",
            "Input tokens",
            "Input (tok/s)"
        ]
    );
    let summary = dir.summary();
    assert!(summary["Input Throughput (tok/s)"].as_f64().unwrap() > 0.0);
}

#[test]
fn rerank_file_dataset_sends_query_and_documents() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/rerank")
        .model("rr")
        .flags("--api rerank --dataset rerank")
        .input(
            "--dataset-path",
            "rr.jsonl",
            "{\"query\": \"what is rust\", \"documents\": [\"a language\", \"a fungus\"]}\n",
        )
        .flags("--number 2");
    run.ok();
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].0, "/v1/rerank");
    assert_eq!(
        reqs[0].1,
        r#"{"query": "what is rust", "documents": ["a language", "a fungus"], "model": "rr"}"#
    );
}
