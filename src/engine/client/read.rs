//! The response body readers of [`HttpClient`] (refusals, streams, whole bodies) and the rules that
//! turn a response or a transport error into a record's outcome and one line of text.

use std::time::Instant;

use super::{http1, Conn, Head, HttpClient};
use crate::api::openai_event;
use crate::engine::sse::SseFramer;
use crate::plan::ApiKind;
use crate::record::{one_line, FailureKind, RequestRecord};

/// Longest error body kept in a record (the rest is cut, with a note).
const MAX_ERROR_BYTES: usize = 4096;

/// Largest non-stream or error body read (a longer one fails the request instead of filling memory).
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

impl HttpClient {
    /// A response other than 200: the request fails with its status, reason, `Retry-After` and the start
    /// of its body. Returns whether the connection can be reused.
    pub(super) async fn read_refusal(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        let mut text = Vec::new();
        let read = read_bounded(conn, self.pool(record.endpoint).endpoint(), head, &mut text).await;
        let at = Instant::now();
        let shown = clip(&text);
        let retry_after = head
            .retry_after
            .as_deref()
            .map(|v| format!(" (Retry-After: {})", one_line(v)))
            .unwrap_or_default();
        let (status, reason) = (head.status, one_line(&head.reason));
        let msg = match (&read, shown.is_empty()) {
            (Err(e), _) => {
                format!("HTTP {status} {reason}{retry_after}: (body unreadable: {e})")
            }
            (Ok(_), true) => format!("HTTP {status} {reason}{retry_after}"),
            (Ok(_), false) => format!("HTTP {status} {reason}{retry_after}: {shown}"),
        };
        record.fail(FailureKind::HttpStatus, msg, at);
        read
    }

    /// A `text/event-stream` response: each read's events applied as they arrive, stamped with the read's
    /// arrival time; a stream that ends without its end marker and without usage fails.
    pub(super) async fn read_stream(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        record.is_stream = true;
        record.completed_at = record.sent_at;
        let mut framer = SseFramer::new();
        let mut scan = crate::api::StreamScan::default();
        let mut saw_done = false;
        let debug = self.inner.debug;
        let api = self.inner.api;
        let index = record.index;
        let read = conn
            .read_body(self.pool(record.endpoint).endpoint(), head, |data, at| {
                if debug {
                    tracing::debug!(
                        index,
                        "chunk: {}",
                        truncate(&String::from_utf8_lossy(data), 200)
                    );
                }
                framer.push(data, |event| {
                    saw_done |= event == b"[DONE]";
                    crate::api::apply_stream_event(api, record, event, at, &mut scan)
                });
            })
            .await;
        match read {
            Ok(reusable) => {
                let at = Instant::now();
                framer.finish(|event| {
                    saw_done |= event == b"[DONE]";
                    crate::api::apply_stream_event(api, record, event, at, &mut scan)
                });
                if !saw_done
                    && record.failure.is_none()
                    && !has_usage(record)
                    && !cut_short_is_counted(api, self.inner.usage_counted_later)
                {
                    let end = match api {
                        ApiKind::Responses => "a `response.completed` event",
                        _ => "`data: [DONE]`",
                    };
                    record.fail(
                        FailureKind::BadResponse,
                        format!("the stream ended without {end} and carried no token usage"),
                        at,
                    );
                }
                finish(record, self.inner.usage_counted_later);
                Ok(reusable)
            }
            Err(e) => {
                let at = Instant::now();
                record.fail(classify(&e), e.to_string(), at);
                Err(e)
            }
        }
    }

    /// A whole (non-stream) response body, parsed once it is complete.
    pub(super) async fn read_whole(
        &self,
        conn: &mut Conn,
        head: &Head,
        record: &mut RequestRecord,
    ) -> Result<bool, http1::Error> {
        record.is_stream = false;
        let mut bytes = Vec::new();
        let read = read_bounded(
            conn,
            self.pool(record.endpoint).endpoint(),
            head,
            &mut bytes,
        )
        .await;
        let at = Instant::now();
        match &read {
            Ok(_) => {
                record.completed_at = at;
                if crate::api::apply_body(self.inner.api, record, &bytes) {
                    finish(record, self.inner.usage_counted_later);
                } else {
                    record.fail(
                        unusable_body_kind(&head.content_type, &bytes),
                        unusable_body(&head.content_type, &bytes),
                        at,
                    );
                }
            }
            Err(e) => record.fail(classify(e), e.to_string(), at),
        }
        read
    }
}

/// Reads a whole body into `out` (at most [`MAX_BODY_BYTES`]).
async fn read_bounded(
    conn: &mut Conn,
    endpoint: &http1::Endpoint,
    head: &Head,
    out: &mut Vec<u8>,
) -> Result<bool, http1::Error> {
    let mut too_big = false;
    let reusable = conn
        .read_body(endpoint, head, |data, _| {
            if out.len() + data.len() <= MAX_BODY_BYTES {
                out.extend_from_slice(data);
            } else {
                too_big = true;
            }
        })
        .await?;
    if too_big {
        return Err(http1::Error::Protocol(http1::ProtocolError::BodyTooLarge(
            MAX_BODY_BYTES,
        )));
    }
    Ok(reusable)
}

/// Success rules after a complete response: an in-band error fails; a response without usage fails
/// unless `counted_later` (a tokenizer, or an input-only API, will count it in the aggregator) — evalscope
/// would abort the whole run instead.
fn finish(record: &mut RequestRecord, counted_later: bool) {
    if record.failure.is_some() {
        record.success = false;
        return;
    }
    if !counted_later && !has_usage(record) {
        record.success = false;
        record.failure = Some(FailureKind::BadResponse);
        record.error = Some(
            "the response carried no token usage (`usage`), and no tokenizer is configured to count tokens"
                .to_string(),
        );
        return;
    }
    record.success = true;
}

/// Whether a stream that ended cleanly without its end event and without usage still counts, its tokens
/// counted later by the tokenizer: a Responses API stream without `response.completed` does, as evalscope's
/// Responses plugin keeps it (success unless `response.failed` / `error` came); a chat or completions
/// stream without `[DONE]` and usage never does (it was cut off, so its output tokens would be short).
fn cut_short_is_counted(api: ApiKind, counted_later: bool) -> bool {
    api == ApiKind::Responses && counted_later
}

fn has_usage(record: &RequestRecord) -> bool {
    record.usage.prompt_tokens.is_some() || record.usage.completion_tokens.is_some()
}

/// The kind of a 200 body that is not JSON: malformed when it was labelled or shaped as JSON, else an
/// unusable response (wrong `Content-Type`).
fn unusable_body_kind(content_type: &str, body: &[u8]) -> FailureKind {
    let jsonish = content_type.contains("json")
        || body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if jsonish {
        FailureKind::Malformed
    } else {
        FailureKind::BadResponse
    }
}

/// The error text for a 200 body that is not JSON.
fn unusable_body(content_type: &str, body: &[u8]) -> String {
    match unusable_body_kind(content_type, body) {
        FailureKind::Malformed => openai_event::describe_malformed("response body", body),
        _ => {
            let shown = if content_type.is_empty() {
                "no Content-Type".to_string()
            } else {
                format!("Content-Type {content_type:?}")
            };
            format!(
                "unexpected {shown} (expected text/event-stream or application/json) and a body that is not JSON: {}",
                clip(&body[..body.len().min(200)])
            )
        }
    }
}

pub(super) fn body_requests_stream(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("stream").and_then(|s| s.as_bool()))
        == Some(true)
}

/// The kind of a transport error. The total timeout is enforced outside the HTTP client, so a timeout here
/// is a connect timeout (`connect`) or a read timeout. A connection reset or closed before the response head
/// keeps its kind (`reset`, `disconnect`; evalscope fails it the same way) and has no status: after
/// `HttpClient::start`'s retry it was a connection opened for this request, which the server accepted
/// and dropped unanswered, so the load verdict counts it as refused (docs/load-verdict.md).
pub(super) fn classify(e: &http1::Error) -> FailureKind {
    match e {
        http1::Error::Connect(_) => FailureKind::Connect,
        http1::Error::ReadTimeout(_) => FailureKind::ReadTimeout,
        http1::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => {
            FailureKind::Reset
        }
        http1::Error::Io(_) | http1::Error::Closed => FailureKind::Disconnect,
        http1::Error::Protocol(_) => FailureKind::BadResponse,
    }
}

/// The error and its causes, one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let part = c.to_string();
        if !s.contains(&part) {
            s.push_str(": ");
            s.push_str(&part);
        }
        cur = c.source();
    }
    s
}

/// Up to [`MAX_ERROR_BYTES`] of `bytes` as one line of text (line breaks escaped, invalid UTF-8 replaced).
fn clip(bytes: &[u8]) -> String {
    let text = one_line(&String::from_utf8_lossy(
        &bytes[..bytes.len().min(MAX_ERROR_BYTES)],
    ));
    if bytes.len() > MAX_ERROR_BYTES {
        format!("{text}… ({} bytes in all)", bytes.len())
    } else {
        text
    }
}

pub(super) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= 2 * n {
        return s.to_string();
    }
    let head: String = s.chars().take(n).collect();
    let tail: String = s
        .chars()
        .rev()
        .take(n)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn missing_usage_fails_the_request() {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), Instant::now());
        r.is_stream = true;
        finish(&mut r, false);
        assert!(!r.success);
        assert_eq!(r.failure, Some(FailureKind::BadResponse));
        r.failure = None;
        finish(&mut r, true);
        assert!(r.success, "kept for counting later");
        r.usage.completion_tokens = Some(3);
        finish(&mut r, false);
        assert!(r.success);
    }

    #[test]
    fn stream_flag_read_from_body() {
        assert!(body_requests_stream(r#"{"stream": true}"#));
        assert!(!body_requests_stream(r#"{"stream": false}"#));
        assert!(!body_requests_stream("nope"));
        // evalscope's `is_stream_body`: absent, or truthy but not the boolean true, is not a stream.
        for body in [
            r#"{}"#,
            r#"{"stream": "true"}"#,
            r#"{"stream": "True"}"#,
            r#"{"stream": 1}"#,
        ] {
            assert!(!body_requests_stream(body), "{body}");
        }
    }

    #[test]
    fn truncate_keeps_head_and_tail() {
        assert_eq!(truncate("abcdef", 1), "a…f");
        assert_eq!(truncate("ab", 1), "ab");
    }
}
