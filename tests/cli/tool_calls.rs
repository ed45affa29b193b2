//! Tool-calling and structured-output workloads against the simulator: per-row `tools` and
//! `response_format`, reassembled stream fragments compared byte for byte with what the simulator sent,
//! the validity rates (summary keys recounted from the database), time to first tool call against the
//! simulator's truth, `--mock-invalid-output-rate` through `--api mock` and `serve-mock`, BFCL files, and
//! bad rows refused before anything is written.

use std::collections::HashMap;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer, TruthRecord};
use serde_json::{json, Value};

use crate::common::{fast_sim, serve_mock, Run};

/// A function with a few typed, required parameters.
fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "minLength": 2},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "days"], "additionalProperties": false}}})
}

/// One `line_by_line` body row.
fn row(extra: Value) -> String {
    let mut body =
        json!({"messages": [{"role": "user", "content": "What is the weather in Paris?"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    format!("{body}\n")
}

/// The tool-call columns of every row, in order.
struct ToolRow {
    start: f64,
    ttft: f64,
    calls: Option<i64>,
    valid: Option<i64>,
    invalid: Option<i64>,
    first_call: Option<f64>,
    calls_json: Option<String>,
    schema_valid: Option<i64>,
    truncated: Option<i64>,
    error: Option<String>,
}

fn tool_rows(db: &std::path::Path) -> Vec<ToolRow> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT start_time, first_chunk_latency, tool_call_count, valid_tool_calls, invalid_tool_calls,
                    first_tool_call_latency, tool_calls, schema_valid, truncated, validation_error
             FROM result ORDER BY rowid",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok(ToolRow {
                start: r.get(0)?,
                ttft: r.get(1)?,
                calls: r.get(2)?,
                valid: r.get(3)?,
                invalid: r.get(4)?,
                first_call: r.get(5)?,
                calls_json: r.get(6)?,
                schema_valid: r.get(7)?,
                truncated: r.get(8)?,
                error: r.get(9)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// The simulator's truth by the id of the call it sent (`call_<request>_0`).
fn truth_by_call_id(truth: &[TruthRecord]) -> HashMap<String, &TruthRecord> {
    truth
        .iter()
        .filter_map(|t| {
            let call = t.structured.as_ref()?.tool_call.as_ref()?;
            Some((call.id.clone(), t))
        })
        .collect()
}

#[test]
fn invalid_calls_are_counted_per_call_and_fragments_match_the_simulator_byte_for_byte() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        invalid_output_rate: 0.2,
        ..SimConfig::default()
    })
    .unwrap();
    let dir = Run::at(&sim, "/v1/chat/completions")
        .input(
            "--dataset-path",
            "tools.jsonl",
            row(json!({"tools": [weather_tool()]})),
        )
        .flags("--dataset line_by_line --parallel 4 --number 200 --max-tokens 100 --seed 11")
        .ok_dir("parallel_4_number_200");
    let summary = dir.summary();
    assert_eq!(summary["Tool Requests"], json!(200));
    assert_eq!(summary["Tool Call Rate (%)"], json!(100.0));
    assert_eq!(summary["Tool Calls"], json!(200));
    let valid_pct = summary["Valid Tool Calls (%)"].as_f64().unwrap();
    // 80 % expected; three standard errors of a 200-call sample are ±8.5 points.
    assert!((71.5..=88.5).contains(&valid_pct), "{valid_pct}");
    let rows = tool_rows(&dir.db());
    let (calls, valid, invalid) = rows.iter().fold((0, 0, 0), |(c, v, i), r| {
        (
            c + r.calls.unwrap(),
            v + r.valid.unwrap(),
            i + r.invalid.unwrap(),
        )
    });
    assert_eq!((calls, valid + invalid), (200, 200), "no call was cut");
    let recount = ((valid as f64) * 100.0 / (valid + invalid) as f64 * 100.0).round() / 100.0;
    assert_eq!(
        valid_pct, recount,
        "the summary equals a recount from the DB"
    );

    let truth = sim.truth();
    let by_id = truth_by_call_id(&truth);
    for r in &rows {
        let calls: Value = serde_json::from_str(r.calls_json.as_deref().unwrap()).unwrap();
        assert_eq!(calls.as_array().unwrap().len(), 1);
        let call = &calls[0];
        let t = by_id[call["id"].as_str().unwrap()];
        let sent = t.structured.as_ref().unwrap();
        let sent_call = sent.tool_call.as_ref().unwrap();
        // Reassembled from the stream's fragments, byte for byte.
        assert_eq!(call["name"], json!(sent_call.name));
        assert_eq!(call["arguments"].as_str().unwrap(), sent_call.arguments);
        // Valid exactly when the simulator did not break it on purpose.
        assert_eq!(r.valid == Some(1), !sent.invalid, "{:?}", r.error);
        assert_eq!(r.error.is_some(), sent.invalid);
        assert_eq!((r.truncated, r.schema_valid), (Some(0), None));
        // The first tool-call chunk is the first output chunk; the client saw it after the simulator
        // sent it, within the client's normal TTFT accuracy.
        let first = r.first_call.unwrap();
        assert_eq!(first, r.ttft);
        let seen = r.start + first;
        let sent_at = sent.first_tool_call_s.unwrap();
        assert!(
            seen >= sent_at - 1e-4 && seen - sent_at < 0.05,
            "client {seen} vs simulator {sent_at}"
        );
    }
    let invalid_sent = rows.iter().filter(|r| r.valid == Some(0)).count();
    assert_eq!(
        invalid_sent,
        truth
            .iter()
            .filter(|t| t
                .structured
                .as_ref()
                .is_some_and(|s| s.invalid && t.completion_tokens > 4))
            .count(),
        "every invalid call the simulator sent (connection test aside) was counted"
    );
    assert!(
        summary["Avg Time to First Tool Call (ms)"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn json_schema_outputs_truncation_and_non_stream_calls() {
    let sim = fast_sim();
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]});
    let format =
        json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema}});
    // The second row's own max_tokens (3) cuts its output: the row's body wins over the flags.
    let rows = row(json!({"response_format": format}))
        + &row(json!({"response_format": format, "max_tokens": 3}));
    let dir = Run::at(&sim, "/v1/chat/completions")
        .input("--dataset-path", "json.jsonl", rows)
        .flags(r#"--dataset line_by_line --number 6 --max-tokens 200 --extra-args '{"parallel_tool_calls": false, "max_tokens": 7}'"#)
        .ok_dir("parallel_1_number_6");
    let summary = dir.summary();
    assert_eq!(summary["Schema Requests"], json!(6));
    assert_eq!(summary["Schema Valid (%)"], json!(100.0));
    assert_eq!(summary["Truncated (%)"], json!(50.0));
    assert!(summary.get("Tool Call Rate (%)").is_none());
    for (i, r) in tool_rows(&dir.db()).iter().enumerate() {
        let cut = i % 2 == 1;
        assert_eq!(r.truncated, Some(i64::from(cut)));
        // A cut output is not JSON; it is counted as truncated, not against Schema Valid.
        assert_eq!(r.schema_valid, Some(i64::from(!cut)));
        assert_eq!((r.calls, r.calls_json.as_deref()), (None, None));
    }
    // The body: the row's keys, then the flags' (extra args last, filling only what the row lacks).
    let requests: Vec<Value> = dir
        .rows()
        .iter()
        .map(|r| serde_json::from_str(&r.request).unwrap())
        .collect();
    assert_eq!(requests[0]["response_format"], format);
    assert_eq!(requests[0]["parallel_tool_calls"], json!(false));
    assert_eq!(requests[1]["max_tokens"], json!(3));
    assert_eq!(requests[0]["max_tokens"], json!(200));

    // Non-stream tool calls: the first call arrives with the whole body.
    let dir = Run::at(&sim, "/v1/chat/completions")
        .input(
            "--dataset-path",
            "tools.jsonl",
            row(json!({"tools": [weather_tool()], "tool_choice": "required"})),
        )
        .flags("--dataset line_by_line --number 3 --max-tokens 100 --no-stream")
        .ok_dir("parallel_1_number_3");
    assert_eq!(dir.summary()["Valid Tool Calls (%)"], json!(100.0));
    for (r, plain) in tool_rows(&dir.db()).iter().zip(dir.rows()) {
        assert_eq!(r.first_call, plain.latency);
        assert_eq!((r.calls, r.valid), (Some(1), Some(1)));
    }
}

#[test]
fn the_mock_flag_reaches_the_simulator_in_process_and_as_serve_mock() {
    let tools = row(json!({"tools": [weather_tool()]}));
    let dir = Run::new()
        .flags("--api mock --model m --dataset line_by_line --parallel 4 --number 200 --max-tokens 100")
        .flags("--mock-ttft-ms 1 --mock-itl-ms 0 --mock-invalid-output-rate 0.5")
        .input("--dataset-path", "tools.jsonl", &tools)
        .ok_dir("parallel_4_number_200");
    let pct = dir.summary()["Valid Tool Calls (%)"].as_f64().unwrap();
    assert!((39.0..=61.0).contains(&pct), "{pct}");
    assert_eq!(dir.args()["mock_invalid_output_rate"], json!(0.5));

    let (mut child, url) = serve_mock(&[
        "--ttft-ms",
        "1",
        "--itl-ms",
        "0",
        "--mock-invalid-output-rate",
        "1",
    ]);
    let dir = Run::with_url(&format!("{url}/chat/completions"))
        .flags("--dataset line_by_line --number 5 --max-tokens 100")
        .input("--dataset-path", "tools.jsonl", &tools)
        .ok_dir("parallel_1_number_5");
    drop(child.stdin.take());
    let _ = child.wait();
    assert_eq!(dir.summary()["Valid Tool Calls (%)"], json!(0.0));
    assert_eq!(dir.summary()["Tool Call Rate (%)"], json!(100.0));

    let err = Run::new()
        .flags("--api mock --model m --prompt hi --mock-invalid-output-rate 1.5")
        .fails(2);
    assert!(err.contains("--mock-invalid-output-rate 1.5"), "{err}");
    let err = Run::with_url("http://127.0.0.1:9/v1")
        .flags("--prompt hi --mock-invalid-output-rate 0.5")
        .fails(2);
    assert!(err.contains("--mock-invalid-output-rate"), "{err}");
}

#[test]
fn plain_runs_have_no_tool_keys_and_null_tool_columns() {
    let sim = fast_sim();
    let dir = Run::against(&sim)
        .flags("--prompt 'hello there' --number 2 --max-tokens 4")
        .ok_dir("parallel_1_number_2");
    let summary = dir.summary();
    for key in [
        "Tool Call Rate (%)",
        "Valid Tool Calls (%)",
        "Schema Valid (%)",
        "Truncated (%)",
    ] {
        assert!(summary.get(key).is_none(), "{key}");
    }
    for r in tool_rows(&dir.db()) {
        assert!(r.calls.is_none() && r.valid.is_none() && r.first_call.is_none());
        assert!(r.calls_json.is_none() && r.schema_valid.is_none() && r.truncated.is_none());
    }
}

#[test]
fn bfcl_files_become_chat_requests_with_tools() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bfcl/BFCL_v3_sample.json");
    let sim = fast_sim();
    let dir = Run::at(&sim, "/v1/chat/completions")
        .flag("--dataset-path", &fixture)
        .flags("--dataset bfcl --number 4 --max-tokens 200")
        .ok_dir("parallel_1_number_4");
    let summary = dir.summary();
    assert_eq!(summary["Tool Call Rate (%)"], json!(100.0));
    assert_eq!(summary["Valid Tool Calls (%)"], json!(100.0));
    let requests: Vec<Value> = dir
        .rows()
        .iter()
        .map(|r| serde_json::from_str(&r.request).unwrap())
        .collect();
    let first = &requests[0];
    assert_eq!(first["messages"][0]["role"], json!("user"));
    let params = &first["tools"][0]["function"]["parameters"];
    assert_eq!(params["type"], json!("object"), "BFCL's dict");
    assert_eq!(params["properties"]["base"]["type"], json!("integer"));
    assert_eq!(
        params["properties"]["height"]["type"],
        json!("number"),
        "BFCL's float"
    );
    assert_eq!(params["properties"]["height"]["format"], json!("float"));
    assert_eq!(first["model"], json!("m"));
    assert_eq!(first["stream"], json!(true));
    // Every entry of the file was sent once, in order.
    let names: Vec<&str> = requests
        .iter()
        .map(|r| r["tools"][0]["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4);
    assert_ne!(names[0], names[1]);
}

#[test]
fn bad_tools_and_schemas_exit_2_naming_the_file_and_line_before_writing() {
    let rows =
        row(json!({"tools": [weather_tool()]})) + &row(json!({"tools": {"get_weather": {}}}));
    let run = Run::against(&fast_sim())
        .input("--dataset-path", "bad-tools.jsonl", rows)
        .flags("--dataset line_by_line --number 2");
    let err = run.fails(2);
    assert!(err.contains("bad-tools.jsonl"), "{err}");
    assert!(
        err.contains("line 2: \"tools\" must be a list of function definitions"),
        "{err}"
    );
    assert_eq!(run.out_entries(), 0, "nothing written");

    let bad_schema = row(json!({"response_format": {"type": "json_schema",
        "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"n": {"type": "intger"}}}}}}));
    let run = Run::against(&fast_sim())
        .input("--dataset-path", "bad-schema.jsonl", bad_schema)
        .flags("--dataset line_by_line --number 1");
    let err = run.fails(2);
    assert!(
        err.contains("bad-schema.jsonl")
            && err.contains("line 1: \"response_format\" schema is not valid JSON Schema"),
        "{err}"
    );
    assert_eq!(run.out_entries(), 0);

    let run = Run::against(&fast_sim()).flags(
        r#"--prompt hi --extra-args '{"tools": [{"type": "function", "function": {"name": "f", "parameters": {"required": "x"}}}]}'"#,
    );
    let err = run.fails(2);
    assert!(err.contains("--extra-args: \"tools\"[0] (f)"), "{err}");
    assert_eq!(run.out_entries(), 0);
}
