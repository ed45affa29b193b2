//! `workload_trace` parsing and rewriting, and evalscope's `test_workload_trace.py` case by case.

use super::*;
use serde_json::json;

#[test]
fn timestamps_as_numbers_and_iso_times() {
    assert_eq!(timestamp(&json!(12.5)).unwrap(), 12.5);
    assert_eq!(timestamp(&json!("7")).unwrap(), 7.0);
    assert_eq!(
        timestamp(&json!("1970-01-01T00:16:40.150Z")).unwrap(),
        1000.15
    );
    assert_eq!(timestamp(&json!("1970-01-01T01:00:00+01:00")).unwrap(), 0.0);
    assert_eq!(timestamp(&json!("1970-01-02 00:00:00")).unwrap(), 86400.0);
    assert_eq!(timestamp(&json!("1970-01-02")).unwrap(), 86400.0);
    assert!(timestamp(&json!("yesterday"))
        .unwrap_err()
        .to_string()
        .contains("yesterday"));
    assert!(timestamp(&json!(true)).is_err());
}

#[test]
fn records_are_validated_line_by_line_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"body\": {}, \"timestamp\": 1}\nnot json\n\n{\"body\": {}}\n{\"body\": {}, \"timestamp\": 2, \"x\": 1}\n").unwrap();
    let args = parse_args(None).unwrap();
    let e = load(&bad, &args).unwrap_err().to_string();
    assert!(e.contains("(3 error(s))"), "{e}");
    assert!(
        e.contains("line 2: invalid JSON")
            && e.contains("line 4: missing \"timestamp\"")
            && e.contains("line 5: unknown key \"x\""),
        "{e}"
    );

    let good = dir.path().join("good.jsonl");
    std::fs::write(
        &good,
        concat!(
            r#"{"body": {"model": "a", "messages": []}, "timestamp": 10, "completion_tokens": 5, "request_id": "r2"}"#, "\n",
            r#"{"body": "{\"model\": \"b\", \"response_format\": {\"type\": \"json_object\"}}", "timestamp": 9, "completion_tokens": 3, "headers": {"X-T": "1"}}"#, "\n",
        ),
    )
    .unwrap();
    let m: Map<String, Value> = serde_json::from_value(json!({"speed": 2, "match_output_length": true, "model_mapping": {"a": "A"}, "model_override": "O"})).unwrap();
    let args = parse_args(Some(&m)).unwrap();
    let reqs = load(&good, &args).unwrap();
    assert_eq!(reqs[0].offset_s, 0.0);
    assert_eq!(reqs[1].offset_s, 0.5);
    assert_eq!(reqs[0].body["model"], "O");
    assert_eq!(
        reqs[0].body.get("ignore_eos"),
        None,
        "constrained decoding keeps only max_tokens"
    );
    assert_eq!(reqs[0].body["max_tokens"], 3);
    assert_eq!(reqs[0].headers, vec![("X-T".to_string(), "1".to_string())]);
    assert_eq!(reqs[1].body["model"], "A");
    assert_eq!(reqs[1].body["ignore_eos"], true);
    assert_eq!(reqs[1].request_id.as_deref(), Some("r2"));
    let e = parse_args(Some(&serde_json::from_value(json!({"speed": 0})).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("speed"));
    let global = vec![("authorization".to_string(), "x".to_string())];
    let trace = vec![
        ("Authorization".to_string(), "y".to_string()),
        ("Connection".to_string(), "close".to_string()),
        ("X-Tenant".to_string(), "t1".to_string()),
    ];
    assert_eq!(
        header_lines(&trace, &global).as_deref(),
        Some("X-Tenant: t1\r\n")
    );
    assert_eq!(header_lines(&trace[..2], &global), None);
}

/// Writes `lines` as a trace file and loads it with `dataset_args`.
fn load_lines(lines: &[Value], dataset_args: Value) -> Result<Vec<TraceRequest>, TraceError> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    load_text(&text, dataset_args)
}

fn load_text(text: &str, dataset_args: Value) -> Result<Vec<TraceRequest>, TraceError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, text).unwrap();
    let args = parse_args(dataset_args.as_object())?;
    load(&path, &args)
}

/// evalscope's `_record`: a qwen-72b chat body at `timestamp`.
fn rec(timestamp: Value) -> Value {
    json!({"body": {"model": "qwen-72b", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}, "timestamp": timestamp})
}

fn offsets(reqs: &[TraceRequest]) -> Vec<f64> {
    reqs.iter().map(|r| r.offset_s).collect()
}

#[test]
fn evalscope_loading_models_and_offsets() {
    // Blank lines are skipped; every field of the body is kept; optional fields may be absent.
    let text = format!(
        "{}\n\n   \n{}\n",
        json!({"body": {"model": "qwen-72b", "messages": [], "temperature": 0.9, "max_tokens": 100}, "timestamp": 1.0}),
        json!({"body": {"model": "m", "messages": []}, "timestamp": 2.0})
    );
    let reqs = load_text(&text, Value::Null).unwrap();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (
            reqs[0].body["temperature"].clone(),
            reqs[0].body["max_tokens"].clone()
        ),
        (json!(0.9), json!(100))
    );
    assert!(reqs[1].headers.is_empty() && reqs[1].request_id.is_none());
    // Model rewriting: the mapping first, then the override, else the recorded model.
    for (args, model) in [
        (json!({"model_override": "new-model"}), "new-model"),
        (
            json!({"model_mapping": {"qwen-72b": "qwen-72b-v2"}}),
            "qwen-72b-v2",
        ),
        (
            json!({"model_mapping": {"other": "x"}, "model_override": "fallback"}),
            "fallback",
        ),
        (json!({"model_mapping": {"other": "x"}}), "qwen-72b"),
        (
            json!({"model_mapping": {"qwen-72b": "mapped"}, "model_override": "overridden"}),
            "mapped",
        ),
    ] {
        let reqs = load_lines(&[rec(json!(0.0))], args.clone()).unwrap();
        assert_eq!(reqs[0].body["model"], model, "{args}");
    }
    // Offsets from the first timestamp, divided by the speed.
    let three = [rec(json!(10.0)), rec(json!(12.0)), rec(json!(15.0))];
    assert_eq!(
        offsets(&load_lines(&three, Value::Null).unwrap()),
        [0.0, 2.0, 5.0]
    );
    let two = [rec(json!(10.0)), rec(json!(14.0))];
    assert_eq!(
        offsets(&load_lines(&two, json!({"speed": 2.0})).unwrap()),
        [0.0, 2.0]
    );
    let two = [rec(json!(0.0)), rec(json!(1.0))];
    assert_eq!(
        offsets(&load_lines(&two, json!({"speed": 0.5})).unwrap()),
        [0.0, 2.0]
    );
    // ISO-8601 with Z or an offset, integers, and numbers mixed with ISO times.
    for (a, b, gap) in [
        (
            json!("2025-01-15T10:00:00Z"),
            json!("2025-01-15T10:00:05Z"),
            5.0,
        ),
        (
            json!("2025-01-15T18:00:00+08:00"),
            json!("2025-01-15T18:00:03+08:00"),
            3.0,
        ),
        (json!(1000), json!(1002), 2.0),
    ] {
        let reqs = load_lines(&[rec(a), rec(b)], Value::Null).unwrap();
        assert_eq!(offsets(&reqs), [0.0, gap]);
    }
    let mixed = load_lines(
        &[rec(json!(1000.0)), rec(json!("2025-01-15T10:00:00Z"))],
        Value::Null,
    );
    assert_eq!(mixed.unwrap().len(), 2);
    // Out of order: sorted, not refused.
    let reqs = load_lines(&[rec(json!(5.0)), rec(json!(3.0))], Value::Null).unwrap();
    assert_eq!(offsets(&reqs), [0.0, 2.0]);
    // A body given as a JSON string.
    let body = json!({"model": "qwen", "messages": [], "temperature": 0.7}).to_string();
    let reqs = load_lines(&[json!({"body": body, "timestamp": 0.0})], Value::Null).unwrap();
    assert_eq!(
        (
            reqs[0].body["model"].clone(),
            reqs[0].body["temperature"].clone()
        ),
        (json!("qwen"), json!(0.7))
    );
}

#[test]
fn evalscope_validation_errors() {
    let err = |lines: &[Value], args: Value| load_lines(lines, args).unwrap_err().to_string();
    assert!(load_text("", Value::Null)
        .unwrap_err()
        .to_string()
        .contains("empty"));
    assert!(load_text("not json\n", Value::Null)
        .unwrap_err()
        .to_string()
        .contains("line 1: invalid JSON"));
    assert!(err(&[json!({"timestamp": 0.0})], Value::Null).contains("line 1: missing \"body\""));
    let no_ts = json!({"body": {"model": "m", "messages": []}});
    assert!(err(&[no_ts], Value::Null).contains("line 1: missing \"timestamp\""));
    let reserved = json!({"body": {"model": "m", "__evalscope_headers": {}}, "timestamp": 0.0});
    assert!(err(&[reserved], Value::Null).contains("reserved"));
    assert!(err(&[rec(json!(0.0))], json!({"speed": -1.0})).contains("speed"));
    assert!(err(&[rec(json!(0.0))], json!({"bogus": true})).contains("bogus"));
    let text = format!("{}\nbad line\n", rec(json!(0.0)));
    assert!(load_text(&text, Value::Null)
        .unwrap_err()
        .to_string()
        .contains("line 2"));
    assert!(err(&[rec(json!("not-a-date"))], Value::Null).contains("cannot parse timestamp"));
    let bad_body = json!({"body": "not valid json", "timestamp": 0.0});
    assert!(err(&[bad_body], Value::Null).contains("not valid JSON"));
    let list_body = json!({"body": "[1, 2, 3]", "timestamp": 0.0});
    assert!(err(&[list_body], Value::Null).contains("must decode to an object"));
    for bad in [0, -1, -100] {
        let mut r = rec(json!(0.0));
        r["completion_tokens"] = json!(bad);
        assert!(
            err(&[r], Value::Null).contains("completion_tokens must be > 0"),
            "{bad}"
        );
    }
}

#[test]
fn evalscope_match_output_length() {
    let with = |body: Value, completion: Option<u64>, args: Value| {
        let mut r = json!({"body": body, "timestamp": 0.0});
        if let Some(n) = completion {
            r["completion_tokens"] = json!(n);
        }
        load_lines(&[r], args).unwrap().remove(0).body
    };
    let on = json!({"match_output_length": true});
    let chat = |extra: Value| {
        let mut b = json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let b = with(chat(json!({})), Some(42), on.clone());
    assert_eq!(
        (b["max_tokens"].clone(), b["ignore_eos"].clone()),
        (json!(42), json!(true))
    );
    let b = with(chat(json!({})), Some(42), Value::Null);
    assert!(
        b.get("ignore_eos").is_none() && b.get("max_tokens").is_none(),
        "off"
    );
    let b = with(chat(json!({})), None, on.clone());
    assert!(
        b.get("ignore_eos").is_none(),
        "no recorded completion_tokens"
    );
    let b = with(chat(json!({"max_tokens": 999})), Some(50), on.clone());
    assert_eq!(b["max_tokens"], 50, "the recorded length wins");
    let tools = json!([{"type": "function", "function": {"name": "get_weather"}}]);
    // Constrained decoding keeps only max_tokens; text formats and free tool choice also get ignore_eos.
    for (extra, ignore_eos) in [
        (json!({"response_format": {"type": "json_object"}}), false),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}}}),
            false,
        ),
        (json!({"response_format": {"type": "text"}}), true),
        (json!({"tools": tools, "tool_choice": "required"}), false),
        (
            json!({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
            false,
        ),
        (json!({"tools": tools, "tool_choice": "auto"}), true),
        (json!({"tools": tools, "tool_choice": "none"}), true),
        (json!({"tools": tools}), true),
    ] {
        let b = with(chat(extra.clone()), Some(50), on.clone());
        assert_eq!(b["max_tokens"], 50, "{extra}");
        assert_eq!(b.get("ignore_eos").is_some(), ignore_eos, "{extra}");
    }
}

#[test]
fn bad_tools_in_a_body_name_the_line() {
    let e = record(r#"{"body": {"tools": [{"type": "function"}]}, "timestamp": 1}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "\"tools\"[0] is not a function definition: no \"function\" object"
    );
}
