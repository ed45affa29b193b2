//! `--scenario agentx` (smoke mode) against the real llama.cpp server: every call of a small generated
//! session — main agent, a sub-agent, a continuation that shares the history's blocks — reaches the server
//! in graph order with exactly its recorded prompt length (SmolLM2's tokenizer predicts the server's count,
//! chat template included) and generates its recorded output length. (Prefix-cache hits on the real server
//! are checked with a Mooncake trace in `mooncake_cache.rs`.)

use crate::common::*;
use crate::server::{RealServer, MODEL};

const TRACE: &str = r#"{"id":"main","models":["m"],"block_size":32,"hash_id_scope":"local","requests":[{"type":"s","t":0.0,"model":"m","in":120,"out":3,"hash_ids":[1,2,3],"api_time":0.2},{"type":"subagent","t":0.3,"agent_id":"sub","subagent_type":"Explore","status":"completed","duration_ms":500,"models":["m"],"requests":[{"type":"s","t":0.35,"model":"m","in":70,"out":2,"hash_ids":[9,10],"api_time":0.1}]},{"type":"s","t":0.9,"model":"m","in":180,"out":4,"hash_ids":[1,2,3,4,5],"api_time":0.2}]}
"#;

#[test]
fn agentx_calls_have_their_recorded_lengths_on_the_real_server() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("traces.jsonl"), TRACE).unwrap();
    let out = dir.path().join("out");
    ok(&llmperf(
        &out,
        &[
            "--scenario",
            r#"{"name":"agentx","mode":"smoke"}"#,
            "--url",
            &format!("{}/chat/completions", server.v1()),
            "--model",
            MODEL,
            "--tokenizer-path",
            &crate::tokens::smollm2(),
            "--dataset-path",
            data.to_str().unwrap(),
            "--parallel",
            "1",
            "--duration",
            "3",
        ],
    ));
    let run = run_root(&out, MODEL).join("agentx_256k/parallel_1");
    let conn = rusqlite::Connection::open(run.join("benchmark_data.db")).unwrap();
    let rows: Vec<(String, i64, i64, i64)> = conn
        .prepare(
            "SELECT request_id, prompt_tokens, completion_tokens, COALESCE(cached_tokens, 0) FROM result \
             WHERE request_id LIKE '0/%' ORDER BY send_time",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let got: Vec<(&str, i64, i64)> = rows.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
    assert_eq!(
        got,
        [
            ("0/main:0", 120, 3),
            ("0/sub:0", 70, 2),
            ("0/main:1", 180, 4)
        ],
        "the first session in graph order, with the recorded lengths"
    );
    let summary = json_file(&run.join("agentx_summary.json"));
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["metrics"]["error_request_count"]["avg"], 0.0);
    assert_eq!(
        summary["metrics"]["input_sequence_length"]["min"], 70.0,
        "{summary}"
    );
}
