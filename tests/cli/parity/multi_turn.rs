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
