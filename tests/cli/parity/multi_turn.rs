//! Issue 31's class 4: in a multi-turn run on the Responses API a turn's own output cap (a trie trace's
//! recorded answer length) is sent as `max_output_tokens`, as evalscope's `set_request_max_tokens` does
//! for that API, not as `max_tokens` beside the default `max_output_tokens`.

use crate::common::*;
use crate::multi_turn::turns;
use crate::tokens::tokenizer_dir;

#[test]
fn responses_turns_send_their_output_cap_as_max_output_tokens() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/responses");
    let file = run.file(
        "code_qa_8k.jsonl",
        r#"{"input_prompt_length": 12, "num_turns": 2, "assistant_response_length": [3, 4], "tool_call_output_length": [5, 6], "tool_call_latency": [0.0, 0.0], "final_assistant_response_length": 7}"#,
    );
    let dir = run
        .flags("--api openai_responses --multi-turn --dataset trie_code_qa --max-tokens 50")
        .flag("--dataset-path", file.parent().unwrap())
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(r#"--number 1 --seed 3 --extra-args '{"ignore_eos": true}' --no-test-connection"#)
        .ok_dir("parallel_1_number_1");
    let rows = turns(&dir.db());
    assert_eq!(rows.len(), 3, "num_turns + 1 turns");
    for (turn, cap) in rows.iter().zip([3i64, 4, 7]) {
        let body = &turn.2;
        assert_eq!(body["max_output_tokens"], cap, "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert!(body["input"].is_array(), "the history goes in `input`");
        assert_eq!(turn.4, cap, "the server honoured the cap");
    }
    assert!(sim
        .requests()
        .iter()
        .all(|(path, _, _)| path == "/v1/responses"));
}

/// evalscope's `test_perf_multi_turn.py::test_share_gpt_zh_multi_turn` (run against DashScope there): the
/// ShareGPT conversations replayed turn by turn, at most `--max-turns` user turns each, the recorded
/// assistant answers replaced by the server's. (`random_multi_turn` and `swe_smith`, its other two cases,
/// are `multi_turn::random_multi_turn_resends_the_history_with_the_real_answers` and
/// `swe_smith_live::swe_smith_live_runs_the_documented_command`.)
#[test]
fn share_gpt_conversations_replay_with_the_real_answers_up_to_max_turns() {
    let sim = fast_sim();
    let conversation = |tag: &str| {
        let turns: Vec<serde_json::Value> = (1..=5)
            .map(|k| serde_json::json!({"human": format!("{tag} question {k}"), "assistant": format!("recorded answer {k}")}))
            .collect();
        serde_json::json!({"conversation": turns}).to_string() + "\n"
    };
    let dir = Run::at(&sim, "/v1/chat/completions")
        .flags("--multi-turn --dataset share_gpt_zh_multi_turn --parallel 2 --number 2")
        .flags("--max-tokens 4 --max-turns 4 --no-test-connection")
        .input(
            "--dataset-path",
            "common_zh_70k.jsonl",
            conversation("a") + &conversation("b"),
        )
        .ok_dir("parallel_2_number_2");
    let rows = turns(&dir.db());
    assert_eq!(rows.len(), 8, "two conversations of --max-turns 4 turns");
    for t in &rows {
        let messages = t.2["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2 * t.1 as usize + 1);
        for (k, m) in messages.iter().enumerate() {
            if k % 2 == 1 {
                assert_eq!(m["role"], "assistant");
                assert_eq!(
                    m["content"], "hello hello hello hello ",
                    "the server's answer"
                );
            }
        }
    }
    assert_eq!(dir.summary()["Total Requests"], 8);
}
