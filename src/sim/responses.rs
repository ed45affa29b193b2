//! The simulator's `POST /v1/responses` (the OpenAI Responses API): the events and bodies, on the same
//! timeline as chat streams ([`super::stream::SseBody`] decides when each chunk is due and calls
//! [`write_chunk`]).
//!
//! A stream is `response.created`, `response.in_progress`, `response.output_item.added`,
//! `response.content_part.added`, one `response.output_text.delta` per chunk, then
//! `response.output_text.done`, `response.output_item.done` and `response.completed` with the usage
//! (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`), each as `event:` + `data:` lines,
//! and no `[DONE]` — as OpenAI and llama.cpp's server send them. Content faults map onto the API's own
//! failure shapes: `error-event` sends `response.failed`, `no-done` leaves out `response.completed`,
//! `truncated` ends after the first delta, `malformed` cuts the first delta's JSON.

use std::fmt::Write as _;

use bytes::BytesMut;

use super::fault::Fault;
use super::plan::{write_text_fault, Plan, TOKEN_TEXT};

/// Appends one SSE event of type `kind` whose JSON object (without braces) starts with `"type":kind` and
/// continues with `fields` (already formatted, with a leading comma when not empty).
fn event(w: &mut BytesMut, kind: &str, fields: &str) {
    let _ = write!(
        w,
        "event: {kind}\ndata: {{\"type\":\"{kind}\"{fields}}}\n\n"
    );
}

/// `"id":…,"object":"response","created_at":…,"status":…,"model":…` of the response object.
fn response_head(plan: &Plan, status: &str) -> String {
    format!(
        r#""id":"resp_{}","object":"response","created_at":{},"status":"{status}","model":{}"#,
        plan.id, plan.created, plan.model_json
    )
}

/// The `usage` member (no trailing comma).
fn usage(plan: &Plan) -> String {
    let (p, c) = (plan.prompt_tokens, u64::from(plan.tokens));
    format!(
        r#""usage":{{"input_tokens":{p},"input_tokens_details":{{"cached_tokens":{}}},"output_tokens":{c},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
        plan.cached_tokens,
        p + c
    )
}

/// The message output item holding `text` (already JSON-escaped).
fn message_item(plan: &Plan, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"msg_{}","status":"completed","role":"assistant","content":[{{"type":"output_text","text":"{text}","annotations":[]}}]}}"#,
        plan.id
    )
}

/// Appends the events of chunk `j` (tokens `start..end`): the opening events before the first delta, the
/// closing events after the last one (`last`); `cut` ends the stream after this chunk (a fault).
pub(crate) fn write_chunk(
    w: &mut BytesMut,
    plan: &Plan,
    j: u32,
    (start, end): (u32, u32),
    last: bool,
    cut: bool,
) {
    let item_id = format!(
        r#","item_id":"msg_{}","output_index":0,"content_index":0"#,
        plan.id
    );
    if j == 0 {
        let head = response_head(plan, "in_progress");
        event(
            w,
            "response.created",
            &format!(r#","response":{{{head},"output":[]}}"#),
        );
        event(
            w,
            "response.in_progress",
            &format!(r#","response":{{{head},"output":[]}}"#),
        );
        event(
            w,
            "response.output_item.added",
            &format!(
                r#","output_index":0,"item":{{"type":"message","id":"msg_{}","status":"in_progress","role":"assistant","content":[]}}"#,
                plan.id
            ),
        );
        event(
            w,
            "response.content_part.added",
            &format!(r#"{item_id},"part":{{"type":"output_text","text":"","annotations":[]}}"#),
        );
    }
    if j == 0 && plan.fault == Some(Fault::Malformed) {
        // Cut off mid-object: not JSON.
        w.extend_from_slice(
            b"event: response.output_text.delta\ndata: {\"type\":\"response.output_te\n\n",
        );
        return;
    }
    if end > start {
        let _ = write!(
            w,
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\"{item_id},\"delta\":\""
        );
        for _ in start..end {
            w.extend_from_slice(TOKEN_TEXT.as_bytes());
        }
        if j == 0 {
            write_text_fault(w, plan.fault);
        }
        w.extend_from_slice(b"\"}\n\n");
    }
    if cut {
        if plan.fault == Some(Fault::ErrorEvent) {
            let head = response_head(plan, "failed");
            event(
                w,
                "response.failed",
                &format!(
                    r#","response":{{{head},"error":{{"code":"server_error","message":"simulated in-band error"}},"output":[]}}"#
                ),
            );
        }
        return;
    }
    if !last {
        return;
    }
    let text = TOKEN_TEXT.repeat(plan.tokens as usize);
    event(
        w,
        "response.output_text.done",
        &format!(r#"{item_id},"text":"{text}""#),
    );
    event(
        w,
        "response.output_item.done",
        &format!(r#","output_index":0,"item":{}"#, message_item(plan, &text)),
    );
    if plan.fault != Some(Fault::NoDone) {
        let head = response_head(plan, "completed");
        let output = message_item(plan, &text);
        let usage = usage(plan);
        event(
            w,
            "response.completed",
            &format!(r#","response":{{{head},"output":[{output}],{usage}}}"#),
        );
    }
}

/// A whole (non-stream) response whose output text is `text`; under `error-event`, a failed response.
pub(crate) fn full_body(plan: &Plan, text: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(text.len() + 512);
    if plan.fault == Some(Fault::ErrorEvent) {
        let head = response_head(plan, "failed");
        let _ = write!(
            out,
            r#"{{{head},"error":{{"code":"server_error","message":"simulated in-band error"}},"output":[]}}"#
        );
        return out;
    }
    let head = response_head(plan, "completed");
    let _ = write!(
        out,
        r#"{{{head},"output":[{{"type":"message","id":"msg_{}","status":"completed","role":"assistant","content":[{{"type":"output_text","text":""#,
        plan.id
    );
    out.extend_from_slice(text);
    let _ = write!(out, r#"","annotations":[]}}]}}],{}}}"#, usage(plan));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    use super::super::plan::Api;

    fn plan(tokens: u32, fault: Option<Fault>) -> Plan {
        Plan {
            api: Api::Responses,
            id: 7,
            created: 1,
            model_json: "\"m\"".into(),
            tokens,
            tokens_per_chunk: 1,
            finish_reason: "stop",
            include_usage: false,
            prompt_tokens: 3,
            reasoning_tokens: 0,
            cached_tokens: 1,
            received: Instant::now(),
            arrived: Instant::now(),
            pace: None,
            ttft: Duration::ZERO,
            itl: Duration::ZERO,
            fault,
            jitter: None,
            structured: None,
        }
    }

    /// The JSON payloads of the `data:` lines.
    fn payloads(w: &[u8]) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(w)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn a_stream_is_valid_json_events_with_usage_last() {
        let p = plan(2, None);
        let mut w = BytesMut::new();
        write_chunk(&mut w, &p, 0, (0, 1), false, false);
        write_chunk(&mut w, &p, 1, (1, 2), true, false);
        let events = payloads(&w);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let done = events.last().unwrap();
        assert_eq!(done["response"]["usage"]["input_tokens"], 3);
        assert_eq!(done["response"]["usage"]["output_tokens"], 2);
        assert_eq!(
            done["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            1
        );
        assert_eq!(
            done["response"]["output"][0]["content"][0]["text"],
            "hello hello "
        );
    }

    #[test]
    fn faults_use_the_apis_failure_shapes() {
        let p = plan(2, Some(Fault::ErrorEvent));
        let mut w = BytesMut::new();
        write_chunk(&mut w, &p, 0, (0, 1), false, true);
        let last = payloads(&w).pop().unwrap();
        assert_eq!(last["type"], "response.failed");
        let body: serde_json::Value = serde_json::from_slice(&full_body(&p, b"x")).unwrap();
        assert_eq!(body["status"], "failed");
        let p = plan(1, None);
        let body: serde_json::Value = serde_json::from_slice(&full_body(&p, b"hello ")).unwrap();
        assert_eq!(body["usage"]["output_tokens"], 1);
        assert_eq!(body["output"][0]["content"][0]["text"], "hello ");
    }
}
