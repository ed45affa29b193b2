//! Tool calls and JSON outputs: the fragments a stream carries (several tokens per chunk too) join to what
//! the ground truth says was sent; non-stream bodies; the length limit.

use super::*;

fn tool_body(extra: Value) -> String {
    let tools = json!([{"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"query": {"type": "string", "minLength": 12}, "limit": {"type": "integer"}},
        "required": ["query"]}}}]);
    let mut body = json!({"tools": tools, "max_tokens": 100});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    chat_body(body)
}

#[tokio::test]
async fn streamed_fragments_join_to_the_truth_at_any_chunking() {
    for per in [1, 3] {
        let sim = SimServer::start(SimConfig {
            tokens_per_chunk: per,
            ..cfg(0, 0)
        })
        .unwrap();
        let body = tool_body(json!({"stream": true, "stream_options": {"include_usage": true}}));
        let (_, _, text) = post(&sim, "/v1/chat/completions", &body).await;
        let (chunks, done) = parse(&frames(&text));
        assert!(done);
        let truth = &sim.truth()[0];
        let sent = truth.structured.as_ref().unwrap();
        let call = sent.tool_call.as_ref().unwrap();
        let mut args = String::new();
        let mut header = None;
        for c in &chunks {
            for tc in c["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert_eq!(tc["index"], 0);
                if tc.get("id").is_some() {
                    header = Some((tc["id"].clone(), tc["function"]["name"].clone()));
                }
                args.push_str(tc["function"]["arguments"].as_str().unwrap());
            }
        }
        assert_eq!(header, Some((json!(call.id), json!("lookup"))));
        assert_eq!(args, call.arguments);
        assert!(!sent.invalid);
        let parsed: Value = serde_json::from_str(&args).unwrap();
        assert!(parsed["query"].as_str().unwrap().len() >= 12);
        let last = &chunks[chunks.len() - 2];
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
        let usage = &chunks[chunks.len() - 1]["usage"];
        assert_eq!(usage["completion_tokens"], json!(truth.completion_tokens));
        // The header token plus one per fragment of at most 4 bytes.
        assert_eq!(truth.completion_tokens, 1 + args.len().div_ceil(4) as u64);
        assert_eq!(sent.first_tool_call_s, truth.first_token_s);
    }
}

#[tokio::test]
async fn non_stream_calls_json_outputs_and_the_length_limit() {
    let sim = SimServer::start(cfg(0, 0)).unwrap();
    let (_, _, text) = post(&sim, "/v1/chat/completions", &tool_body(json!({}))).await;
    let body: Value = serde_json::from_str(&text).unwrap();
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    let truth = &sim.truth()[0];
    let sent = truth
        .structured
        .as_ref()
        .unwrap()
        .tool_call
        .as_ref()
        .unwrap();
    assert_eq!(call["function"]["arguments"], json!(sent.arguments));
    assert_eq!(call["id"], json!(sent.id));
    assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");

    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let format = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}});
    for (max_tokens, finish, content) in
        [(50, "stop", r#"{"ok":true}"#), (2, "length", r#"{"ok":tr"#)]
    {
        let req = chat_body(json!({"response_format": format, "max_tokens": max_tokens}));
        let (_, _, text) = post(&sim, "/v1/chat/completions", &req).await;
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], json!(content));
        assert_eq!(body["choices"][0]["finish_reason"], json!(finish));
        let truth = sim.truth();
        let last = truth.last().unwrap().structured.as_ref().unwrap();
        assert_eq!(last.content.as_deref(), Some(content));
    }
    // Completions requests are plain text, whatever they carry.
    let req = json!({"prompt": "a", "max_tokens": 2, "tools": [{"type": "function", "function": {"name": "f"}}]});
    let (_, _, text) = post(&sim, "/v1/completions", &req.to_string()).await;
    assert!(text.contains("hello"), "{text}");
}
