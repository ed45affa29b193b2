//! Issue 31's class 5: a rerank reply with HTTP 200 and no usage, without a tokenizer, is a success with 0
//! input tokens, as evalscope 1.14.1's rerank plugin keeps it (many rerank servers report no usage) — the
//! stated exception to llmperf's "no usage and no tokenizer fails the request" rule. An embeddings reply
//! without usage still fails (evalscope would record 0 tokens and an input throughput of 0).

use crate::common::*;

const RERANK_REPLY: &str = r#"{"results": [{"index": 1, "relevance_score": 0.91}, {"index": 0, "relevance_score": 0.12}]}"#;

#[test]
fn a_rerank_reply_without_usage_succeeds_with_zero_input_tokens() {
    let stub = StubServer::start(|_, _| Reply::json(RERANK_REPLY));
    let run = Run::with_url(&stub.url("/v1/reranks"))
        .flags("--api openai_rerank --dataset rerank --number 3")
        .input(
            "--dataset-path",
            "rr.jsonl",
            "{\"query\": \"what is rust\", \"documents\": [\"a language\", \"a fungus\"]}\n",
        );
    let dir = run.ok_dir("parallel_1_number_3");
    let rows = dir.rows();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.prompt_tokens, Some(0));
        assert_eq!(r.completion_tokens, Some(0));
    }
    let summary = dir.summary();
    assert_eq!(summary["Success Requests"], 3);
    assert_eq!(summary["Failed Requests"], 0);
    assert_eq!(
        stub.requests().len(),
        3,
        "input-only APIs have no connection test"
    );
}

#[test]
fn an_embeddings_reply_without_usage_still_fails() {
    let stub = StubServer::start(|_, _| {
        Reply::json(
            r#"{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}]}"#,
        )
    });
    let run = Run::with_url(&stub.url("/v1/embeddings"))
        .flags("--api openai_embedding --dataset embedding --number 2")
        .input("--dataset-path", "q.txt", "what is rust\n");
    run.no_success();
    let rows = run.run_dir("parallel_1_number_2").rows();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(!r.success);
        assert!(
            r.error.as_deref().unwrap_or("").contains("usage"),
            "{:?}",
            r.error
        );
    }
}
