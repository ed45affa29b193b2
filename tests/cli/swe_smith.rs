//! `--dataset swe_smith` through the CLI: a pre-built `agentic_dataset.json` in swe_smith's record layout
//! replayed against the simulator (each turn's delta appended to the history with the server's real
//! answers, `rid` per turn, empty conversations skipped, the list rotated by the sweep's dataset offset),
//! and the malformed-file / missing-file errors (exit 2, no output folder).

use std::path::Path;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

use crate::common::Run;
use crate::multi_turn::turns;

/// Two conversations (the first with a `rid`) and an empty one between them, as
/// `build_swe_smith_dataset.py` writes them (`messages` deltas plus `prompt_tokens`).
fn dataset() -> Value {
    json!({"conversations": [
        [
            {"messages": [{"role": "system", "content": "You are a coding agent."},
                          {"role": "user", "content": "Fix the failing test in utils.py"}],
             "prompt_tokens": 21, "rid": "swe-7"},
            {"messages": [{"role": "user", "content": "OBSERVATION: 3 tests failed"}], "prompt_tokens": 40},
            {"messages": [{"role": "user", "content": "OBSERVATION: diff applied"},
                          {"role": "user", "content": "OBSERVATION: all tests pass"}], "prompt_tokens": 66}
        ],
        [],
        [
            {"messages": [{"role": "user", "content": "Rename the config loader"}], "prompt_tokens": 9},
            {"messages": [{"role": "user", "content": "OBSERVATION: 2 files changed"}], "prompt_tokens": 20}
        ]
    ]})
}

fn messages(conv: &Value, turn: usize) -> Vec<Value> {
    conv[turn]["messages"].as_array().unwrap().clone()
}

#[test]
fn swe_smith_replays_the_file_turns_with_the_real_answers() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        prefix_cache: true,
        record_truth: true,
        ..SimConfig::default()
    })
    .expect("simulator starts");
    let data = dataset();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset swe_smith")
        .input("--dataset-path", "agentic_dataset.json", data.to_string())
        .flags("--parallel 1 1 --number 2 1 --max-tokens 2 --name swe");
    run.ok();
    let root = run.root();
    let rows = turns(&root.join("parallel_1_number_2").join("benchmark_data.db"));
    let ids: Vec<(i64, i64)> = rows.iter().map(|t| (t.0, t.1)).collect();
    assert_eq!(
        ids,
        vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)],
        "one row per turn; the empty conversation is skipped"
    );
    let (a, b) = (&data["conversations"][0], &data["conversations"][2]);
    // Each turn sends the whole history: the file's deltas with the server's answers between them.
    let mut history: Vec<Value> = Vec::new();
    for (turn, row) in rows[..3].iter().enumerate() {
        if turn > 0 {
            let answer = &row.2["messages"][history.len()];
            assert_eq!(answer["role"], "assistant");
            assert_eq!(
                answer["content"], "hello hello ",
                "the server's real answer"
            );
            history.push(answer.clone());
        }
        history.extend(messages(a, turn));
        assert_eq!(row.2["messages"], json!(history), "turn {turn}");
        assert_eq!(row.2["rid"], json!(format!("swe-7_t{}", turn + 1)));
        assert_eq!(row.2["max_tokens"], 2, "no per-turn cap: --max-tokens");
    }
    assert_eq!(rows[3].2["messages"], json!(messages(b, 0)));
    assert_eq!(rows[4].2["messages"].as_array().unwrap().len(), 3);
    assert_eq!(rows[4].2["messages"][2], messages(b, 1)[0]);
    assert!(
        rows[3].2.get("rid").is_none(),
        "no rid without one in the file"
    );
    // What the simulator received is what was stored, turn for turn.
    let received: Vec<Value> = sim
        .requests()
        .iter()
        .filter(|r| r.0.ends_with("/chat/completions"))
        .map(|r| serde_json::from_str(&r.1).unwrap())
        .collect();
    let second = turns(&root.join("parallel_1_number_1").join("benchmark_data.db"));
    let stored: Vec<Value> = rows.iter().chain(&second).map(|t| t.2.clone()).collect();
    // (Besides these, one connection test per run.)
    assert_eq!(received.len(), stored.len() + 2);
    for body in &stored {
        assert!(received.contains(body), "not received: {body}");
    }
    // The second run starts at dataset offset 2: the list rotated to [third, first, empty].
    assert_eq!(second.len(), 2);
    assert_eq!(second[0].2["messages"], json!(messages(b, 0)));
}

#[test]
fn swe_smith_bad_files_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad_turn = dir.path().join("bad_turn.json");
    std::fs::write(
        &bad_turn,
        r#"{"conversations": [[{"messages": [{"role": "user", "content": "a"}]}, {"messages": "b"}]]}"#,
    )
    .unwrap();
    let bad_json = dir.path().join("bad_json.json");
    std::fs::write(
        &bad_json,
        "{\"conversations\": [\n  [{\"messages\": []}],\n  oops\n]}",
    )
    .unwrap();

    let cases: Vec<(Option<&Path>, Vec<&str>)> = vec![
        (
            Some(&bad_turn),
            vec![
                "bad_turn.json",
                "conversations[0]: turn 1",
                "\"messages\" must be a list",
            ],
        ),
        (
            Some(&bad_json),
            vec!["bad_json.json", "line 3", "not valid JSON"],
        ),
        (
            None,
            vec!["--dataset-path", "SWE-bench/SWE-smith-trajectories"],
        ),
    ];
    for (file, needles) in cases {
        let mut run = Run::new().flags("--api mock --model m --multi-turn --dataset swe_smith");
        if let Some(f) = file {
            run = run.flag("--dataset-path", f);
        }
        let stderr = run.fails(2);
        for needle in needles {
            assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
        }
        assert_eq!(run.out_entries(), 0, "{file:?} wrote output");
    }
}
