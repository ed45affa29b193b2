use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::api::openai_event::{apply_body, apply_stream_event};

const WEATHER: &str = r#"{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}"#;

fn call_chunk(index: u32, name: Option<&str>, args: &str) -> String {
    let function = match name {
        Some(n) => json!({"name": n, "arguments": args}),
        None => json!({"arguments": args}),
    };
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": function}]}}]})
        .to_string()
}

/// A successful streamed record of `request` whose events arrive 10 ms apart.
fn streamed(request: &str, events: &[String]) -> RequestRecord {
    let mut r = RequestRecord::new(0, false, Arc::from(request), Instant::now());
    let t0 = r.sent_at;
    for (i, e) in events.iter().enumerate() {
        apply_stream_event(
            &mut r,
            e.as_bytes(),
            t0 + Duration::from_millis(10 * (i as u64 + 1)),
        );
    }
    r.is_stream = true;
    r.success = true;
    r
}

#[test]
fn calls_are_validated_against_their_function() {
    let request = format!(r#"{{"messages":[],"tools":[{WEATHER}]}}"#);
    let r = streamed(
        &request,
        &[
            call_chunk(0, Some("get_weather"), ""),
            call_chunk(0, None, r#"{"city":"#),
            call_chunk(0, None, r#" "Rome"}"#),
            call_chunk(1, Some("get_weather"), r#"{"town": "Oslo"}"#),
            call_chunk(2, Some("get_time"), "{}"),
            call_chunk(3, Some("get_weather"), r#"{"city": "#),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.into(),
        ],
    );
    let mut a = Analyzer::new(None);
    let mut r = r;
    a.apply(&mut r);
    let o = r.structured.as_deref().unwrap();
    assert!(o.tools_offered && o.has_tools && !o.truncated);
    assert_eq!((o.tool_calls, o.valid_tool_calls), (4, 1));
    assert_eq!(o.schema_valid, None);
    assert!((o.first_tool_call_s.unwrap() - 0.010).abs() < 1e-9);
    assert!(
        o.error
            .as_deref()
            .unwrap()
            .starts_with("tool call 1 (get_weather): arguments do not validate"),
        "{:?}",
        o.error
    );
    let calls: Value = serde_json::from_str(o.calls_json.as_deref().unwrap()).unwrap();
    assert_eq!(calls[0]["arguments"], json!(r#"{"city": "Rome"}"#));
    assert_eq!(calls[2]["name"], json!("get_time"));
    // The tokenizer counts the arguments.
    let tok = Arc::new(
        Tokenizer::load(
            crate::test_support::tokenizer_dir("smollm2-135m-instruct")
                .to_str()
                .unwrap(),
        )
        .unwrap(),
    );
    let mut b = Analyzer::new(Some(tok.clone()));
    r.structured = None;
    b.apply(&mut r);
    let want: usize = [
        r#"{"city": "Rome"}"#,
        r#"{"town": "Oslo"}"#,
        "{}",
        r#"{"city": "#,
    ]
    .iter()
    .map(|a| tok.count(a).unwrap())
    .sum();
    assert_eq!(r.structured.unwrap().tool_call_tokens, Some(want as u64));
}

#[test]
fn json_outputs_and_truncation() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let request = json!({"messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}).to_string();
    let body = |content: &str, finish: &str| {
        json!({"choices": [{"message": {"content": content}, "finish_reason": finish}], "usage": {"prompt_tokens": 1, "completion_tokens": 5}}).to_string()
    };
    let mut a = Analyzer::new(None);
    let mut stats = ToolCallStats::default();
    for (content, finish, valid) in [
        (r#"{"n": 4}"#, "stop", true),
        (r#"{"n": "4"}"#, "stop", false),
        (r#"{"n": "#, "length", false),
        ("not json", "stop", false),
    ] {
        let mut r = RequestRecord::new(0, false, Arc::from(request.as_str()), Instant::now());
        assert!(apply_body(&mut r, body(content, finish).as_bytes()));
        r.success = true;
        a.apply(&mut r);
        let o = r.structured.as_deref().unwrap();
        assert_eq!(o.schema_valid, Some(valid), "{content}");
        assert_eq!(o.truncated, finish == "length");
        assert!(!o.tools_offered && o.tool_calls == 0 && o.calls_json.is_none());
        stats.add(&r);
    }
    assert_eq!(a.cache.len(), 1, "one spec, compiled once");
    let keys: HashMap<String, Value> = stats.summary_keys().into_iter().collect();
    assert_eq!(keys["Schema Requests"], json!(4));
    // One valid of the three untruncated outputs.
    assert_eq!(keys["Schema Valid (%)"], json!(33.33));
    assert_eq!(keys["Truncated (%)"], json!(25.0));
    assert!(!keys.contains_key("Tool Call Rate (%)") && !keys.contains_key("Valid Tool Calls (%)"));
}

#[test]
fn a_call_cut_by_the_length_limit_is_not_judged() {
    let request = format!(r#"{{"messages":[],"tools":[{WEATHER}]}}"#);
    let mut r = streamed(
        &request,
        &[
            call_chunk(0, Some("get_weather"), r#"{"city": "Rome"}"#),
            call_chunk(1, Some("get_weather"), r#"{"city": "#),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#.into(),
        ],
    );
    Analyzer::new(None).apply(&mut r);
    let o = r.structured.as_deref().unwrap();
    assert!(o.truncated && o.error.is_none());
    assert_eq!(
        (o.tool_calls, o.valid_tool_calls, o.invalid_tool_calls),
        (2, 1, 0)
    );
    // Cut after a complete call: that call is judged.
    let mut whole = streamed(
        &request,
        &[
            call_chunk(0, Some("get_weather"), r#"{"town": "Rome"}"#),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#.into(),
        ],
    );
    Analyzer::new(None).apply(&mut whole);
    let w = whole.structured.as_deref().unwrap();
    assert_eq!(
        (w.tool_calls, w.valid_tool_calls, w.invalid_tool_calls),
        (1, 0, 1)
    );
    let mut stats = ToolCallStats::default();
    stats.add(&r);
    let keys: HashMap<String, Value> = stats.summary_keys().into_iter().collect();
    assert_eq!(keys["Tool Calls"], json!(2));
    assert_eq!(keys["Valid Tool Calls (%)"], json!(100.0));
    assert_eq!(keys["Truncated (%)"], json!(100.0));
}

#[test]
fn json_object_and_plain_requests() {
    let mut a = Analyzer::new(None);
    let spec = RequestSpec::from_parts(None, None, Some(&json!({"type": "json_object"})))
        .unwrap()
        .unwrap();
    let reply = |text: &str| Reply {
        content: text.into(),
        ..Reply::default()
    };
    assert_eq!(outcome(&spec, &reply("{}"), None).schema_valid, Some(true));
    let o = outcome(&spec, &reply("[1]"), None);
    assert_eq!(o.schema_valid, Some(false));
    assert_eq!(o.error.as_deref(), Some("output is JSON but not an object"));
    // A plain request, or a failed one, gets no outcome.
    let mut r = streamed(
        r#"{"messages":[]}"#,
        &[r#"{"choices":[{"delta":{"content":"hi"}}]}"#.into()],
    );
    a.apply(&mut r);
    assert!(r.structured.is_none());
    let mut r = streamed(&format!(r#"{{"tools":[{WEATHER}]}}"#), &[]);
    r.success = false;
    a.apply(&mut r);
    assert!(r.structured.is_none());
    assert!(ToolCallStats::default().summary_keys().is_empty());
}

#[test]
fn tool_stats_keys() {
    let mut stats = ToolCallStats::default();
    let outcomes = [
        (true, 1, 1, Some(0.1)),
        (true, 2, 1, Some(0.3)),
        (true, 0, 0, None),
        (false, 0, 0, None),
    ];
    for (offered, calls, valid, first) in outcomes {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        r.structured = Some(Box::new(StructuredOutcome {
            tools_offered: offered,
            has_tools: true,
            tool_calls: calls,
            valid_tool_calls: valid,
            invalid_tool_calls: calls - valid,
            first_tool_call_s: first,
            ..StructuredOutcome::default()
        }));
        stats.add(&r);
    }
    let keys = stats.summary_keys();
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "Tool Requests",
            "Tool Call Rate (%)",
            "Tool Calls",
            "Valid Tool Calls (%)",
            "Avg Time to First Tool Call (ms)",
            "P50 Time to First Tool Call (ms)",
            "P99 Time to First Tool Call (ms)",
            "Truncated (%)"
        ]
    );
    let k: HashMap<&str, &Value> = keys.iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(k["Tool Requests"], &json!(3));
    assert_eq!(k["Tool Call Rate (%)"], &json!(66.67));
    assert_eq!(k["Valid Tool Calls (%)"], &json!(66.67));
    assert_eq!(k["Avg Time to First Tool Call (ms)"], &json!(200.0));
    assert_eq!(k["P50 Time to First Tool Call (ms)"], &json!(100.0));
    assert_eq!(k["P99 Time to First Tool Call (ms)"], &json!(300.0));
}
