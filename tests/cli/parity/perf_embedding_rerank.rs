//! evalscope's `test_perf_embedding_rerank.py` (runs against DashScope that assert that they complete):
//! the configurations not already run by `tests/cli/embeddings.rs` — `embedding` from a queries file and
//! `random_embedding_batch` with `batch_size` 8, each as a sweep — against the simulator's embeddings
//! endpoint.

use serde_json::Value;

use super::sim_bodies;
use crate::common::*;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

#[test]
fn embedding_sweeps_from_a_file_and_in_random_batches() {
    let sim = fast_sim();
    let run = Run::against(&sim)
        .model("text-embedding-v4")
        .flags("--api openai_embedding --dataset embedding --parallel 1 2 --number 2 4")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .input(
            "--dataset-path",
            "queries.jsonl",
            "{\"text\": \"what is rust\"}\n{\"text\": \"how do crabs walk\"}\n",
        );
    run.ok();
    for (dir, n) in [("parallel_1_number_2", 2), ("parallel_2_number_4", 4)] {
        let summary = run.run_dir(dir).summary();
        assert_eq!(
            (
                summary["Total Requests"].clone(),
                summary["Success Requests"].clone()
            ),
            (n.into(), n.into()),
            "{dir}"
        );
    }
    let inputs: Vec<Value> = sim_bodies(&sim)
        .iter()
        .map(|b| b["input"].clone())
        .collect();
    assert_eq!(inputs.len(), 6);
    assert_eq!(inputs[0], "what is rust");
    assert_eq!(inputs[1], "how do crabs walk");

    let sim = fast_sim();
    let run = Run::against(&sim)
        .model("text-embedding-v4")
        .flags(
            "--api openai_embedding --dataset random_embedding_batch --parallel 1 2 --number 2 4",
        )
        .flags(
            r#"--min-prompt-length 256 --max-prompt-length 256 --extra-args '{"batch_size": 8}'"#,
        )
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    run.ok();
    let tok = raw_tokenizer("qwen3");
    let bodies = sim_bodies(&sim);
    assert_eq!(bodies.len(), 6);
    for b in &bodies {
        let batch = b["input"].as_array().expect("a batch");
        assert_eq!(batch.len(), 8);
        for text in batch {
            assert_eq!(count(&tok, text.as_str().unwrap()), 256);
        }
    }
    assert_eq!(
        run.run_dir("parallel_2_number_4").summary()["Success Requests"],
        4
    );
}
