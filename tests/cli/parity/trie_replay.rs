//! evalscope's `test_trie_replay.py` (PR #1374): a trie trace of `num_turns` tool rounds replays as
//! `num_turns + 1` turns whose output caps are the recorded answer lengths then the final answer's, each
//! later turn preceded by the recorded tool latency; a trace with no tool round is one turn; a trace whose
//! per-turn lists do not match `num_turns` is skipped; every line of the file is a conversation.

use crate::common::*;
use crate::multi_turn::turns;
use crate::tokens::tokenizer_dir;

#[test]
fn traces_map_to_turns_caps_and_tool_latencies() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions");
    let file = run.file(
        "agentic_coding_8k.jsonl",
        concat!(
            r#"{"input_prompt_length": 16, "num_turns": 3, "assistant_response_length": [10, 20, 30], "tool_call_output_length": [8, 8, 8], "tool_call_latency": [0.05, 0.1, 0.15], "final_assistant_response_length": 70}"#,
            "\n",
            r#"{"input_prompt_length": 16, "num_turns": 2, "assistant_response_length": [10], "tool_call_output_length": [8, 8], "tool_call_latency": [0.0, 0.0], "final_assistant_response_length": 5}"#,
            "\n",
            r#"{"input_prompt_length": 16, "num_turns": 0, "assistant_response_length": [], "tool_call_output_length": [], "tool_call_latency": [], "final_assistant_response_length": 70}"#,
            "\n",
        ),
    );
    let dir = run
        .flags("--multi-turn --dataset trie_agentic_coding --number 2")
        .flag("--dataset-path", file.parent().unwrap())
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(r#"--seed 1 --extra-args '{"ignore_eos": true}' --no-test-connection"#)
        .ok_dir("parallel_1_number_2");
    let rows = turns(&dir.db());
    let per_conversation = |c: i64| -> Vec<_> { rows.iter().filter(|t| t.0 == c).collect() };
    // The mismatched trace is skipped: the two conversations are the 3-round and the 0-round traces.
    let first = per_conversation(0);
    let caps: Vec<i64> = first
        .iter()
        .map(|t| t.2["max_tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(caps, [10, 20, 30, 70], "num_turns + 1 turns");
    for (i, latency) in [0.05, 0.1, 0.15].iter().enumerate() {
        let gap = first[i + 1].6 - first[i].7;
        assert!(
            gap >= *latency,
            "the tool latency before turn {}: {gap}",
            i + 2
        );
    }
    let second = per_conversation(1);
    assert_eq!(second.len(), 1, "no tool round: one turn");
    assert_eq!(second[0].2["max_tokens"], 70);
    assert_eq!(rows.len(), 5);
}
