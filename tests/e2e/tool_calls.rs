//! Tool calling and structured output against llama.cpp (SmolLM2-135M-Instruct):
//!
//! * `response_format` `json_schema`: llama.cpp turns the schema into a grammar, so every untruncated output
//!   parses and validates (`Schema Valid (%)` 100).
//! * `tools` with SmolLM2's own chat template: the template has no tool support, llama.cpp renders the
//!   prompt without the tools and the model answers in text — a tool call rate of 0, no call judged.
//! * `tools` with a template that supports tool calls (Qwen3's, from the shared tokenizers: ChatML like
//!   SmolLM2's, with `<tool_call>` blocks) and `tool_choice: "required"`: llama.cpp constrains the output
//!   to tool calls. The 135M model never starts one on its own, so the rows prefill the assistant turn with
//!   `<tool_call>\n`; it then writes calls (grammar-constrained, so valid) and keeps writing more until
//!   `max_tokens`, so every response is truncated, often with its last call cut mid-way (counted, not
//!   judged). The calls reassembled from the stream are the calls of the same request sent without
//!   streaming (temperature 0).

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::server::RealServer;

fn weather() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
}

/// `(tool_call_count, valid_tool_calls, tool_calls, schema_valid, truncated, invalid_tool_calls)` of every
/// row.
type ToolRow = (
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn tool_rows(db: &std::path::Path) -> Vec<ToolRow> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT tool_call_count, valid_tool_calls, tool_calls, schema_valid, truncated, invalid_tool_calls
             FROM result ORDER BY rowid",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

#[test]
fn json_schema_outputs_are_grammar_constrained_and_valid() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["name", "age"], "additionalProperties": false});
    let row = json!({"messages": [{"role": "user", "content": "Describe a person as JSON with a name and an age."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}});
    let dir = server
        .run_at("/chat/completions")
        .input("--dataset-path", "json.jsonl", format!("{row}\n"))
        .flags("--dataset line_by_line --parallel 2 --number 4 --max-tokens 200 --temperature 0")
        .ok_dir("parallel_2_number_4");
    let s = dir.summary();
    assert_eq!(s["Failed Requests"], 0);
    assert_eq!(s["Schema Requests"], 4);
    assert_eq!(
        s["Truncated (%)"], 0.0,
        "200 tokens hold the bounded schema"
    );
    assert_eq!(s["Schema Valid (%)"], 100.0);
    for (calls, _, _, schema_valid, truncated, _) in tool_rows(&dir.db()) {
        assert_eq!((calls, schema_valid, truncated), (None, Some(1), Some(0)));
    }
}

#[test]
fn without_a_tool_template_the_model_answers_in_text() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let row = json!({"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "tools": [weather()]});
    let dir = server
        .run_at("/chat/completions")
        .input("--dataset-path", "tools.jsonl", format!("{row}\n"))
        .flags("--dataset line_by_line --number 2 --max-tokens 16")
        .ok_dir("parallel_1_number_2");
    let s = dir.summary();
    assert_eq!(s["Tool Requests"], 2);
    assert_eq!(s["Tool Call Rate (%)"], 0.0);
    assert_eq!(s["Tool Calls"], 0);
    assert!(s.get("Valid Tool Calls (%)").is_none(), "no call to judge");
    for (calls, valid, json, _, _, invalid) in tool_rows(&dir.db()) {
        assert_eq!(
            (calls, valid, invalid, json),
            (Some(0), Some(0), Some(0), None)
        );
    }
}

/// Qwen3's chat template (tool calls as `<tool_call>` JSON blocks), written to `dir`.
fn tool_template(dir: &std::path::Path) -> PathBuf {
    let shared = std::env::var("LLMPERF_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join("tokenizers/qwen3/tokenizer_config.json")).unwrap(),
    )
    .unwrap();
    let path = dir.join("qwen3.jinja");
    std::fs::write(&path, config["chat_template"].as_str().unwrap()).unwrap();
    path
}

#[test]
fn with_a_tool_template_calls_stream_in_fragments_and_validate() {
    let dir = tempfile::tempdir().unwrap();
    let template = tool_template(dir.path());
    let Some(server) =
        RealServer::start_with(&["--chat-template-file", template.to_str().unwrap()])
    else {
        return;
    };
    let row = json!({"messages": [{"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": "<tool_call>\n"}],
        "tools": [weather()], "tool_choice": "required"});
    let rows = format!("{row}\n");
    let streamed = server
        .run_at("/chat/completions")
        .input("--dataset-path", "tools.jsonl", &rows)
        .flags("--dataset line_by_line --number 3 --max-tokens 40 --temperature 0")
        .ok_dir("parallel_1_number_3");
    let s = streamed.summary();
    assert_eq!(s["Tool Requests"], 3);
    assert_eq!(s["Tool Call Rate (%)"], 100.0);
    assert_eq!(s["Valid Tool Calls (%)"], 100.0, "{s}");
    assert_eq!(
        s["Truncated (%)"], 100.0,
        "the model writes calls until max_tokens"
    );
    assert!(s["Avg Time to First Tool Call (ms)"].as_f64().unwrap() > 0.0);
    let whole = server
        .run_at("/chat/completions")
        .input("--dataset-path", "tools.jsonl", &rows)
        .flags("--dataset line_by_line --number 1 --max-tokens 40 --temperature 0 --no-stream")
        .ok_dir("parallel_1_number_1");
    let calls = |json: &Option<String>| -> Vec<(String, String)> {
        let v: Value = serde_json::from_str(json.as_deref().unwrap()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().into(),
                    c["arguments"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let non_stream = calls(&tool_rows(&whole.db())[0].2);
    assert!(!non_stream.is_empty());
    assert_eq!(non_stream[0].0, "get_weather");
    for (count, valid, json, _, truncated, invalid) in tool_rows(&streamed.db()) {
        assert_eq!((truncated, invalid), (Some(1), Some(0)));
        let (count, valid) = (count.unwrap(), valid.unwrap());
        assert!(
            valid >= 1 && count - valid <= 1,
            "complete calls valid, at most the last one cut"
        );
        assert_eq!(
            calls(&json),
            non_stream,
            "fragments reassemble to the non-stream calls"
        );
    }
}
