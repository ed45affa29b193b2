//! Parity with evalscope's own regression tests (`tests/perf/` of modelscope/evalscope): the observable
//! outcome each of those tests pins down, asserted through the llmperf binary (against the simulator or a
//! small stub server on 127.0.0.1). One file per evalscope test file; the table that maps every applicable
//! evalscope test to its llmperf test (here or elsewhere in the suite) is docs/evalscope-regression-parity.md.

mod async_lifecycle;
pub mod chat_template_error;
mod dataset_args;
mod line_by_line_body;
mod multi_turn;
mod open_loop_strategy;
mod parse_responses;
mod perf_basic;
mod perf_embedding_rerank;
mod perf_sla;
mod prefix_injection;
mod report_loader;
mod request_build_errors;
mod rerank;
mod responses_stream;
mod streaming;
mod target_input_len;
mod trie_replay;
mod workload_trace;

use std::path::PathBuf;

use serde_json::Value;

use crate::common::Run;
use crate::tokens::tokenizer_dir;

/// A copy of the Qwen3 tokenizer without its chat template (like a base checkpoint, or DeepSeek-V3.2 / V4,
/// which ship none), written beside `run`'s input files; returns its folder.
pub fn tokenizer_without_template(run: &Run) -> PathBuf {
    let src = PathBuf::from(tokenizer_dir("qwen3"));
    let json = std::fs::read(src.join("tokenizer.json")).unwrap();
    let out = run
        .file("tokenizer.json", json)
        .parent()
        .unwrap()
        .to_path_buf();
    let config = std::fs::read_to_string(src.join("tokenizer_config.json")).unwrap();
    let mut config: serde_json::Map<String, Value> = serde_json::from_str(&config).unwrap();
    assert!(config.remove("chat_template").is_some());
    run.file(
        "tokenizer_config.json",
        serde_json::to_string(&config).unwrap(),
    );
    out
}

/// The JSON bodies of the requests the simulator received, in arrival order.
pub fn sim_bodies(sim: &llmperf::sim::SimServer) -> Vec<Value> {
    sim.requests()
        .into_iter()
        .map(|(_, body, _)| serde_json::from_str(&body).unwrap())
        .collect()
}
