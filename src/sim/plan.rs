//! What one simulated response will be — its API, id, tokens, timing, usage and content fault — and the
//! pieces of its text shared by the chat, completion and Responses writers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use super::fault::{Fault, BIG_LINE_BYTES};

/// The text of one generated token: one whitespace-separated word, so output token counts are checkable.
pub(crate) const TOKEN_TEXT: &str = "hello ";

/// Which OpenAI API a generation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completion,
    /// `/v1/responses` (the Responses API, [`super::responses`]).
    Responses,
}

impl Api {
    /// The request path, as recorded in the truth log.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completion => "/v1/completions",
            Api::Responses => "/v1/responses",
        }
    }
}

/// Everything needed to generate one response.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub api: Api,
    pub id: u64,
    /// Unix seconds for the `created` field.
    pub created: u64,
    /// The model name, already JSON-encoded (quoted and escaped).
    pub model_json: String,
    pub tokens: u32,
    pub tokens_per_chunk: u32,
    pub finish_reason: &'static str,
    pub include_usage: bool,
    pub prompt_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: u64,
    pub received: Instant,
    pub ttft: Duration,
    pub itl: Duration,
    /// A content fault to write into the response (transport faults are applied around the body).
    pub fault: Option<Fault>,
    /// Under the capacity model: the request's batch slot, and the model that spaces its tokens when the
    /// decode throughput is shared.
    pub pace: Option<super::capacity::Pace>,
    /// Leading output tokens sent as `reasoning_content` (chat only; at most `tokens`).
    pub reasoning_tokens: u32,
    /// When the request was received, before any wait for a batch slot (`received` is when it was
    /// admitted); the server-side metrics measure from it.
    pub arrived: Instant,
    /// `--mock-jitter-cv`: the request's factors for its token gaps (its TTFT is already scaled).
    pub jitter: Option<super::jitter::Draws>,
    /// A tool call or JSON output instead of text (chat only; see `structured.rs`).
    pub structured: Option<Arc<super::structured::Structured>>,
}

impl Plan {
    /// When token `i` (0-based) is produced: `received + ttft + i * itl`.
    pub(crate) fn token_due(&self, i: u32) -> Instant {
        let offset = self
            .itl
            .checked_mul(i)
            .and_then(|d| d.checked_add(self.ttft))
            .unwrap_or(Duration::from_secs(86_400 * 365));
        self.received + offset
    }

    /// The gap before the next token, now (`itl`, or the shared-decode gap under load), times the next
    /// jitter factor.
    pub(crate) fn token_gap(&mut self) -> Duration {
        let gap = match &self.pace {
            Some(p) if p.capacity.shares_decode() => p.capacity.token_gap(self.itl),
            _ => self.itl,
        };
        match self.jitter.as_mut() {
            Some(j) => j.scale(gap),
            None => gap,
        }
    }

    /// Whether token times are computed one gap at a time: they depend on the load, or are jittered.
    pub(crate) fn gap_by_gap(&self) -> bool {
        self.jitter.is_some()
            || self
                .pace
                .as_ref()
                .is_some_and(|p| p.capacity.shares_decode())
    }

    /// The `usage` object (without a trailing comma or brace after it).
    pub(crate) fn write_usage(&self, out: &mut impl std::fmt::Write) {
        let (p, c) = (self.prompt_tokens, u64::from(self.tokens));
        let _ = write!(
            out,
            r#""usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{}}}"#,
            p + c,
            self.cached_tokens
        );
        if self.reasoning_tokens > 0 {
            let _ = write!(
                out,
                r#","completion_tokens_details":{{"reasoning_tokens":{}}}"#,
                self.reasoning_tokens
            );
        }
        let _ = out.write_char('}');
    }

    /// `"id":…,"object":…,"created":…,"model":…` for a stream chunk or a full body of this API.
    pub(crate) fn write_head_fields(&self, out: &mut impl std::fmt::Write, stream: bool) {
        let (id_prefix, object) = match (self.api, stream) {
            (Api::Chat, true) => ("chatcmpl", "chat.completion.chunk"),
            (Api::Chat, false) => ("chatcmpl", "chat.completion"),
            (Api::Completion, _) => ("cmpl", "text_completion"),
            (Api::Responses, _) => ("resp", "response"),
        };
        let _ = write!(
            out,
            r#""id":"{id_prefix}-{}","object":"{object}","created":{},"model":{}"#,
            self.id, self.created, self.model_json
        );
    }
}

/// Appends the text a content fault puts inside the first chunk's string (10 MiB, or invalid UTF-8).
pub(crate) fn write_text_fault(w: &mut BytesMut, fault: Option<Fault>) {
    match fault {
        Some(Fault::BigLine) => w.extend_from_slice(&vec![b'x'; BIG_LINE_BYTES]),
        Some(Fault::InvalidUtf8) => w.extend_from_slice(&[0xFF, 0xFE]),
        _ => {}
    }
}
