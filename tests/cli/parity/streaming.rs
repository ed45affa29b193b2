//! evalscope's `test_perf_streaming.py` (`StreamedResponseHandler`, PR #1474): SSE events with `id:` and
//! `event:` fields are read by their `data:` field; an event with no `data:` (a ping) is skipped; several
//! `data:` lines of one event are joined; a stream that ends right after its last JSON payload or its
//! `[DONE]`, without the closing blank line, still delivers it.

use serde_json::Value;

use crate::common::*;

fn chunk(text: &str) -> String {
    format!(
        r#"{{"object": "chat.completion.chunk", "choices": [{{"index": 0, "delta": {{"content": "{text}"}}}}]}}"#
    )
}

const USAGE: &str = r#"{"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}}"#;

/// The stub's stream for `case`: three content chunks in the SSE shapes evalscope's tests use, then the
/// usage, and an ending without the closing blank line (after the usage, or after `[DONE]`).
fn stream(case: &str) -> Reply {
    let mut body = format!("id: chunk-1\nevent: message\ndata: {}\n\n", chunk("A"));
    body.push_str("event: ping\nid: keepalive\n\n");
    // One event on two `data:` lines: joined, it is one JSON object.
    let b = chunk("B");
    let (head, tail) = b.split_at(b.find("\"choices\"").unwrap());
    body.push_str(&format!("event: message\ndata: {head}\ndata: {tail}\n\n"));
    body.push_str(&format!("data: {}\n\n", chunk("C")));
    match case {
        "ends_after_usage" => body.push_str(&format!("id: chunk-2\nevent: message\ndata: {USAGE}")),
        _ => body.push_str(&format!("data: {USAGE}\n\nevent: done\ndata: [DONE]")),
    }
    Reply::sse_raw(&body)
}

#[test]
fn sse_metadata_fields_multi_line_data_and_unterminated_endings() {
    let stub = StubServer::start(|_, body| {
        let v: Value = serde_json::from_str(body).unwrap();
        stream(v["case"].as_str().unwrap())
    });
    let lines = concat!(
        r#"{"messages": [{"role": "user", "content": "hi"}], "case": "ends_after_usage"}"#,
        "\n",
        r#"{"messages": [{"role": "user", "content": "hi"}], "case": "ends_after_done"}"#,
        "\n",
    );
    let rows = Run::with_url(&stub.url("/v1/chat/completions"))
        .flags("--dataset line_by_line --number 2 --no-test-connection")
        .input("--dataset-path", "cases.jsonl", lines)
        .ok_dir("parallel_1_number_2")
        .rows();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert!(r.success, "{:?}", r.error);
        assert!(r.is_stream);
        assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(4), Some(3)));
        // Three output chunks (the ping is not one; the two-line event is one): two gaps.
        assert_eq!(r.itl.len(), 2, "{r:?}");
    }
}
