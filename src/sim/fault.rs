//! Fault injection: the ways a real server misbehaves, on demand, so every failure path of the client can be
//! exercised through the CLI.
//!
//! # Choosing a fault for a request
//! The first that applies wins:
//! 1. the request header `x-llmperf-fault: KIND`;
//! 2. the body field `"llmperf_fault": "KIND"` (e.g. from `--extra-args` or a `line_by_line` body);
//! 3. the first of [`SimConfig::faults`](super::SimConfig::faults) whose `every` divides the request's number
//!    (generation requests are numbered 1, 2, … in the order their heads were parsed; the connection test
//!    counts). `--mock-fault KIND[:EVERY]` adds such a rule for `--api mock`.
//!
//! An unknown `KIND` in a header or body field is answered with 400 naming the known kinds.
//!
//! # The faults
//! See [`Fault`]: each variant's doc says what the server does, for a stream and for a whole body.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Sleep;

/// Bytes of text in the [`Fault::BigLine`] chunk: 10 MiB on one SSE line.
pub const BIG_LINE_BYTES: usize = 10 * 1024 * 1024;
/// Pause between bytes of a [`Fault::SlowDrip`] response.
pub const DRIP_EVERY: Duration = Duration::from_millis(100);
/// `Retry-After` (seconds) sent with 429 and 503.
pub const RETRY_AFTER_S: u64 = 1;
/// How long a reset waits after its last frame, so the client has read it before the RST.
const RESET_DELAY: Duration = Duration::from_millis(20);

/// One way to misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `500 Internal Server Error` with an OpenAI-style JSON error body.
    Http500,
    /// `503 Service Unavailable` with `Retry-After: 1`.
    Http503,
    /// `429 Too Many Requests` with `Retry-After: 1`.
    Http429,
    /// `400 Bad Request` (`invalid_request_error`).
    Http400,
    /// Stream: the role and first content chunk, then the TCP connection is reset (RST). Whole body: the
    /// head and half the body, then the reset.
    Reset,
    /// Stream: every chunk and the usage chunk, then a clean end without `data: [DONE]`. Whole body: no
    /// effect.
    NoDone,
    /// Stream: the first content chunk, then a clean end (no finish chunk, no usage, no `[DONE]`). Whole
    /// body: the first half of the JSON.
    Truncated,
    /// Stream: the first content chunk's JSON is cut off (`data: {"id":…,"choices":[{"ind`); the rest
    /// follows as normal. Whole body: the first half of the JSON.
    Malformed,
    /// Stream: the first content chunk, then `data: {"error": {…}}` and `[DONE]`. Whole body: HTTP 200 with
    /// an `{"error": {…}}` body.
    ErrorEvent,
    /// Never sends the response head (until the client leaves or the server stops).
    Hang,
    /// Stream: the head and the first frame, then nothing more. Whole body: the head and half the body.
    Stall,
    /// The normal response, one byte every 100 ms.
    SlowDrip,
    /// The first content chunk carries 10 MiB of text on one line (valid JSON; usage as normal).
    BigLine,
    /// The first content chunk's text holds the bytes `FF FE` (invalid UTF-8).
    InvalidUtf8,
    /// The normal response, labelled `Content-Type: text/plain`.
    WrongContentType,
}

impl Fault {
    /// Every fault, in documentation order.
    pub const ALL: [Fault; 15] = [
        Fault::Http500,
        Fault::Http503,
        Fault::Http429,
        Fault::Http400,
        Fault::Reset,
        Fault::NoDone,
        Fault::Truncated,
        Fault::Malformed,
        Fault::ErrorEvent,
        Fault::Hang,
        Fault::Stall,
        Fault::SlowDrip,
        Fault::BigLine,
        Fault::InvalidUtf8,
        Fault::WrongContentType,
    ];

    /// The name used in `--mock-fault`, the header and the body field.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Http500 => "http-500",
            Fault::Http503 => "http-503",
            Fault::Http429 => "http-429",
            Fault::Http400 => "http-400",
            Fault::Reset => "reset",
            Fault::NoDone => "no-done",
            Fault::Truncated => "truncated",
            Fault::Malformed => "malformed",
            Fault::ErrorEvent => "error-event",
            Fault::Hang => "hang",
            Fault::Stall => "stall",
            Fault::SlowDrip => "slow-drip",
            Fault::BigLine => "big-line",
            Fault::InvalidUtf8 => "invalid-utf8",
            Fault::WrongContentType => "wrong-content-type",
        }
    }

    /// The names of every fault, comma-separated (for error messages and help).
    pub fn names() -> String {
        Fault::ALL.map(Fault::name).join(", ")
    }

    /// The HTTP error this fault answers with, if it is one: (status, `type`, `Retry-After` seconds).
    pub(crate) fn http_error(self) -> Option<(u16, &'static str, Option<u64>)> {
        match self {
            Fault::Http500 => Some((500, "server_error", None)),
            Fault::Http503 => Some((503, "service_unavailable", Some(RETRY_AFTER_S))),
            Fault::Http429 => Some((429, "rate_limit_exceeded", Some(RETRY_AFTER_S))),
            Fault::Http400 => Some((400, "invalid_request_error", None)),
            _ => None,
        }
    }

    /// How the fault acts on the bytes in transit, if it does.
    pub(crate) fn transport(self) -> Option<Transport> {
        match self {
            Fault::Reset => Some(Transport::Reset),
            Fault::Stall => Some(Transport::Stall),
            Fault::SlowDrip => Some(Transport::Drip),
            _ => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Fault, String> {
        let s = s.trim();
        Fault::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown fault {s:?}; known faults: {}", Fault::names()))
    }
}

/// A fault applied to every `every`-th generation request (1 = all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRule {
    /// The fault.
    pub fault: Fault,
    /// Applies to requests number `every`, `2 * every`, … (at least 1).
    pub every: u64,
}

impl FaultRule {
    /// Whether request number `id` (1-based) gets this fault.
    pub fn applies_to(&self, id: u64) -> bool {
        id.is_multiple_of(self.every.max(1))
    }
}

impl FromStr for FaultRule {
    type Err = String;

    /// `KIND` or `KIND:EVERY`, e.g. `http-500:10`.
    fn from_str(s: &str) -> Result<FaultRule, String> {
        let (kind, every) = match s.split_once(':') {
            Some((k, e)) => {
                let every = e
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| {
                        format!("{s:?}: EVERY must be a whole number ≥ 1, e.g. http-500:10")
                    })?;
                (k, every)
            }
            None => (s, 1),
        };
        Ok(FaultRule {
            fault: kind.parse()?,
            every,
        })
    }
}

/// The fault for request number `id`: the header's, else the body field's, else the first matching rule.
/// `Err` carries the text of an unknown fault name.
pub(crate) fn pick(
    header: Option<&str>,
    field: Option<&str>,
    rules: &[FaultRule],
    id: u64,
) -> Result<Option<Fault>, String> {
    if let Some(name) = header.or(field) {
        return name.parse().map(Some);
    }
    Ok(rules.iter().find(|r| r.applies_to(id)).map(|r| r.fault))
}

/// A transport-level fault applied by [`FaultyBody`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// First frame (half of a whole body), then reset the connection.
    Reset,
    /// First frame (half of a whole body), then nothing.
    Stall,
    /// Everything, one byte per [`DRIP_EVERY`].
    Drip,
}

/// Set when a connection must end with a TCP reset rather than a clean close (see `conn.rs`).
pub(crate) type ResetFlag = Arc<AtomicBool>;

/// A response body wrapped by a transport fault.
pub(crate) struct FaultyBody<B> {
    inner: B,
    mode: Transport,
    /// The inner body is one buffer: cut it in half for reset/stall.
    whole: bool,
    pending: Bytes,
    inner_done: bool,
    first_sent: bool,
    sleep: Option<Pin<Box<Sleep>>>,
    reset: ResetFlag,
}

impl<B> fmt::Debug for FaultyBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultyBody")
            .field("mode", &self.mode)
            .finish()
    }
}

/// The inner body's next frame, as [`FaultyBody`] needs it.
pub(crate) trait NextBytes {
    /// The next data frame, `None` at the end.
    fn poll_bytes(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

impl<B: NextBytes> FaultyBody<B> {
    /// Wraps `inner` (`whole`: it is one buffer).
    pub(crate) fn new(inner: B, mode: Transport, whole: bool, reset: ResetFlag) -> Self {
        FaultyBody {
            inner,
            mode,
            whole,
            pending: Bytes::new(),
            inner_done: false,
            first_sent: false,
            sleep: None,
            reset,
        }
    }

    /// The wrapped body.
    pub(crate) fn inner(&self) -> &B {
        &self.inner
    }

    fn poll_sleep(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.sleep {
            Some(s) => {
                std::task::ready!(s.as_mut().poll(cx));
                self.sleep = None;
                Poll::Ready(())
            }
            None => Poll::Ready(()),
        }
    }

    /// The next frame; `Err` ends the connection (with a reset when the flag is set).
    pub(crate) fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::io::Result<Bytes>>> {
        match self.mode {
            Transport::Drip => loop {
                if !self.pending.is_empty() {
                    std::task::ready!(self.poll_sleep(cx));
                    let byte = self.pending.split_to(1);
                    self.sleep = Some(Box::pin(tokio::time::sleep(DRIP_EVERY)));
                    return Poll::Ready(Some(Ok(byte)));
                }
                if self.inner_done {
                    return Poll::Ready(None);
                }
                match std::task::ready!(self.inner.poll_bytes(cx)) {
                    Some(b) => self.pending = b,
                    None => self.inner_done = true,
                }
            },
            Transport::Reset | Transport::Stall => {
                if !self.first_sent {
                    let Some(mut frame) = std::task::ready!(self.inner.poll_bytes(cx)) else {
                        self.first_sent = true;
                        return self.poll_next(cx);
                    };
                    if self.whole {
                        frame.truncate(frame.len() / 2);
                    }
                    self.first_sent = true;
                    if self.mode == Transport::Reset {
                        self.sleep = Some(Box::pin(tokio::time::sleep(RESET_DELAY)));
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
                match self.mode {
                    Transport::Reset => {
                        std::task::ready!(self.poll_sleep(cx));
                        self.reset.store(true, Ordering::Relaxed);
                        Poll::Ready(Some(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "simulated connection reset",
                        ))))
                    }
                    // Nothing more, ever: no waker is kept, so nothing wakes this body again.
                    _ => Poll::Pending,
                }
            }
        }
    }
}

/// `KIND[:EVERY]` as a clap value parser (`--mock-fault`, `serve-mock --fault`).
pub fn parse_fault_rule(s: &str) -> Result<FaultRule, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_rules_parse() {
        for f in Fault::ALL {
            assert_eq!(f.name().parse::<Fault>().unwrap(), f);
        }
        assert_eq!(
            "HTTP-500:3".parse::<FaultRule>().unwrap(),
            FaultRule {
                fault: Fault::Http500,
                every: 3
            }
        );
        assert_eq!("reset".parse::<FaultRule>().unwrap().every, 1);
        assert!("reset:0".parse::<FaultRule>().is_err());
        assert!("reset:x".parse::<FaultRule>().is_err());
        let e = "boom".parse::<FaultRule>().unwrap_err();
        assert!(
            e.contains("http-500") && e.contains("wrong-content-type"),
            "{e}"
        );
    }

    #[test]
    fn header_then_field_then_rules() {
        let rules = [
            FaultRule {
                fault: Fault::Http500,
                every: 3,
            },
            FaultRule {
                fault: Fault::Reset,
                every: 2,
            },
        ];
        assert_eq!(pick(None, None, &rules, 1), Ok(None));
        assert_eq!(pick(None, None, &rules, 2), Ok(Some(Fault::Reset)));
        assert_eq!(pick(None, None, &rules, 6), Ok(Some(Fault::Http500)));
        assert_eq!(
            pick(Some("hang"), Some("stall"), &rules, 6),
            Ok(Some(Fault::Hang))
        );
        assert_eq!(pick(None, Some("stall"), &rules, 1), Ok(Some(Fault::Stall)));
        assert!(pick(Some("nope"), None, &rules, 1).is_err());
    }
}
