//! `--multi-turn` through the CLI against the simulator (prefix cache on): the history with the server's
//! real answers in every turn, one stored row per turn with its conversation and turn, cached tokens and
//! the multi-turn summary keys computed from those rows, `trace_summary.json`, `--session-header`, think
//! time, the file datasets, and the usage errors.

use std::path::Path;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

use crate::common::{json_file, Run};
use crate::tokens::tokenizer_dir;

fn cache_sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        prefix_cache: true,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// One stored turn: `(conversation_id, turn_index, request body, prompt, completion, cached, start, end)`.
pub(crate) type Turn = (i64, i64, Value, i64, i64, Option<i64>, f64, f64);

pub(crate) fn turns(db: &Path) -> Vec<Turn> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT conversation_id, turn_index, request, prompt_tokens, completion_tokens, cached_tokens, \
             start_time, completed_time FROM result ORDER BY conversation_id, turn_index",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let body: String = r.get(2)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                serde_json::from_str(&body).unwrap(),
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

#[test]
fn random_multi_turn_resends_the_history_with_the_real_answers() {
    let sim = cache_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset random_multi_turn")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags("--min-turns 3 --max-turns 3 --min-prompt-length 16 --max-prompt-length 24 --parallel 2")
        .flags("--number 3 --max-tokens 4 --session-header X-Session-Id --name mt")
        .ok_dir("parallel_2_number_3");
    let rows = turns(&run.db());
    assert_eq!(rows.len(), 9, "three conversations of three turns");
    let answer = json!({"role": "assistant", "content": "hello hello hello hello "});
    let (mut cached_sum, mut prompt_sum) = (0i64, 0i64);
    for conv in rows.chunks(3) {
        for (k, t) in conv.iter().enumerate() {
            assert_eq!((t.0, t.1), (conv[0].0, k as i64));
            let messages = t.2["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 2 * k + 1, "history of turn {k}");
            if k > 0 {
                let prev = conv[k - 1].2["messages"].as_array().unwrap();
                assert_eq!(
                    &messages[..prev.len()],
                    &prev[..],
                    "turn {k} resends turn {}",
                    k - 1
                );
                assert_eq!(messages[prev.len()], answer, "the server's real answer");
                assert!(
                    t.3 > conv[k - 1].3,
                    "prompt tokens grow: {} then {}",
                    conv[k - 1].3,
                    t.3
                );
                // The simulator caches the previous prompt and its answer.
                assert_eq!(t.5, Some(conv[k - 1].3 + conv[k - 1].4));
            } else {
                assert_eq!(t.5, Some(0));
            }
            cached_sum += t.5.unwrap();
            prompt_sum += t.3;
        }
    }
    let summary = run.summary();
    assert_eq!(summary["Total Requests"], 9);
    assert_eq!(summary["Avg Turns/Request"], 2.0);
    let hit = (cached_sum as f64 * 100.0 / prompt_sum as f64 * 1e4).round() / 1e4;
    assert_eq!(summary["KV Cache Hit Rate (%)"].as_f64().unwrap(), hit);
    assert!(summary["Avg First-Turn TTFT (ms)"].as_f64().unwrap() > 0.0);
    assert!(summary["Avg Subsequent-Turn TTFT (ms)"].as_f64().unwrap() > 0.0);
    let trace = json_file(&run.join("trace_summary.json"));
    assert_eq!(trace["n_traces"], 3);
    assert_eq!(trace["rows"][5]["metric"], "Eligible Cache Hit Rate (%)");
    assert_eq!(trace["rows"][5]["min"], 100.0);
    let args = run.args();
    assert_eq!(
        (args["multi_turn"].clone(), args["max_turns"].clone()),
        (json!(true), json!(3))
    );

    // One stable session id per conversation, distinct between conversations.
    let mut sessions: Vec<(String, usize)> = Vec::new();
    for (path, body, headers) in sim.requests().iter().skip(1) {
        assert_eq!(path, "/v1/chat/completions");
        let users = serde_json::from_str::<Value>(body).unwrap()["messages"]
            .as_array()
            .unwrap()
            .len();
        let id = headers
            .iter()
            .find(|(k, _)| k == "x-session-id")
            .map(|(_, v)| v.clone())
            .expect("session header");
        sessions.push((id, users));
    }
    let mut ids: Vec<&String> = sessions.iter().map(|(id, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{sessions:?}");
    for id in ids {
        let lens: Vec<usize> = sessions
            .iter()
            .filter(|(i, _)| i == id)
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(lens, vec![1, 3, 5], "one conversation per id: {id}");
    }
    let report =
        std::fs::read_to_string(run.parent().unwrap().join("performance_summary.txt")).unwrap();
    let log = std::fs::read_to_string(run.parent().unwrap().join("benchmark.log")).unwrap();
    assert!(log.contains("100%| 3/3 "), "progress counts conversations");
    let html = std::fs::read_to_string(run.parent().unwrap().join("perf_report.html")).unwrap();
    assert!(
        html.contains("TTFT per turn"),
        "the HTML report charts TTFT per turn"
    );
    assert!(
        report.contains("Per-Trace Metrics") && report.contains("Turns/Req"),
        "{report}"
    );
}

#[test]
fn file_conversations_think_time_and_legacy_args() {
    let sim = cache_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset custom_multi_turn")
        .input(
            "--dataset-path",
            "convs.jsonl",
            concat!(
                r#"[{"role":"system","content":"be brief"},{"role":"user","content":"one"},{"role":"assistant","content":"x"},{"role":"user","content":"two"},{"role":"assistant","content":"y"},{"role":"user","content":"three"}]"#,
                "\n"
            ),
        )
        .flags(r#"--max-turns 2 --number 1 --max-tokens 2 --dataset-args '{"think_time_s": 0.3}'"#)
        .flags(r#"--multi-turn-args '{"chars_per_token": 2.5}' --name c"#)
        .ok_dir("parallel_1_number_1");
    let rows = turns(&run.db());
    assert_eq!(rows.len(), 2, "--max-turns 2 of three turns");
    assert_eq!(
        rows[0].2["messages"],
        json!([{"role":"system","content":"be brief"},{"role":"user","content":"one"}])
    );
    assert_eq!(
        rows[1].2["messages"][3],
        json!({"role":"user","content":"two"}),
        "the dataset's assistant text is replaced by the real answer"
    );
    assert_eq!(rows[1].2["messages"][2]["content"], "hello hello ");
    let pause = rows[1].6 - rows[0].7;
    assert!(pause >= 0.3, "think time before the second turn: {pause}");
    let args = run.args();
    assert_eq!(args["multi_turn_args"]["chars_per_token"], 2.5);
    assert_eq!(args["multi_turn_args"]["first_turn_length"], 65000);
}

#[test]
fn multi_turn_usage_errors_exit_2_and_write_nothing() {
    let tok = tokenizer_dir("qwen3");
    let base = || {
        Run::new()
            .flags("--api mock --model m --multi-turn")
            .flag("--tokenizer-path", &tok)
    };
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--dataset", "random_multi_turn"], "--max-turns"),
        (
            vec!["--dataset", "random_multi_turn", "--max-turns", "0"],
            "--max-turns 0",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--min-turns",
                "4",
                "--max-turns",
                "2",
            ],
            "--max-turns (2) must be >= --min-turns (4)",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--max-turns",
                "2",
                "--dataset-args",
                r#"{"target_input_len": 5}"#,
            ],
            "target_input_len",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--max-turns",
                "2",
                "--dataset-args",
                r#"{"think_time_s": [3, 1]}"#,
            ],
            "think_time_s",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--max-turns",
                "2",
                "--open-loop",
                "--rate",
                "2",
            ],
            "--multi-turn is not supported in open-loop mode",
        ),
        (
            vec!["--dataset", "random"],
            "--multi-turn needs a multi-turn dataset",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--max-turns",
                "2",
                "--multi-turn-args",
                "{oops",
            ],
            "--multi-turn-args",
        ),
        (
            vec![
                "--dataset",
                "random_multi_turn",
                "--max-turns",
                "2",
                "--session-header",
                "bad header",
            ],
            "--session-header",
        ),
    ];
    cases.push((
        vec![
            "--dataset",
            "random_multi_turn",
            "--max-turns",
            "2",
            "--shard-count",
            "2",
        ],
        "not supported with --multi-turn",
    ));
    for (extra, needle) in cases {
        let run = base().args(&extra);
        let stderr = run.fails(2);
        assert!(
            stderr.contains(needle),
            "{extra:?}: {needle:?} not in {stderr}"
        );
        assert_eq!(run.out_entries(), 0, "{extra:?} wrote output");
    }
    let err = Run::new()
        .flags("--api mock --model m --dataset random_multi_turn")
        .flag("--tokenizer-path", &tok)
        .fails(2);
    assert!(err.contains("add --multi-turn"));
}

#[test]
fn trie_traces_replay_recorded_lengths_and_tool_latency() {
    let sim = cache_sim();
    let run = Run::at(&sim, "/v1/chat/completions");
    let file = run.file(
        "code_qa_8k.jsonl",
        concat!(
            r#"{"input_prompt_length": 12, "num_turns": 2, "assistant_response_length": [3, 4], "tool_call_output_length": [5, 6], "tool_call_latency": [0.2, 0.0], "final_assistant_response_length": 7}"#,
            "\n{\"num_turns\": 1}\n"
        ),
    );
    let run = run
        .flags("--multi-turn --dataset trie_code_qa")
        .flag("--dataset-path", file.parent().unwrap())
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(r#"--number 1 --seed 3 --extra-args '{"ignore_eos": true}' --name trie"#)
        .ok_dir("parallel_1_number_1");
    let rows = turns(&run.db());
    assert_eq!(
        rows.len(),
        3,
        "num_turns + 1 turns; the malformed trace is skipped"
    );
    let caps: Vec<i64> = rows
        .iter()
        .map(|t| t.2["max_tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(caps, vec![3, 4, 7], "per-turn output caps");
    let completions: Vec<i64> = rows.iter().map(|t| t.4).collect();
    assert_eq!(completions, vec![3, 4, 7], "ignore_eos honours them");
    assert!(
        rows[1].6 - rows[0].7 >= 0.2,
        "the recorded tool latency before turn 2"
    );
    let tok = llmperf::tokenizer::Tokenizer::load(&tokenizer_dir("qwen3")).unwrap();
    let first = rows[0].2["messages"][0]["content"].as_str().unwrap();
    assert_eq!(
        tok.count(first).unwrap(),
        12,
        "the first prompt has the recorded length"
    );
    let tool = rows[1].2["messages"][2]["content"].as_str().unwrap();
    assert_eq!(
        tok.count(tool).unwrap(),
        5,
        "the tool output has the recorded length"
    );
}
