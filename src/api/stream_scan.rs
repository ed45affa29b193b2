//! Reading the events of one stream without scanning again what they repeat.
//!
//! Consecutive chunks of a stream begin with the same bytes (`{"id":"chatcmpl-7","object":…,"created":…,
//! "model":…,"choices":[…` up to the text). The fast scan ([`super::event_scan`]) notes its state at the
//! start of every top-level key of the last event kept for `response_messages`; the next event is compared
//! with that one's bytes, and its scan resumes at the last such key inside the shared part. The state at a
//! point depends only on the bytes before it, so the result is exactly a full scan's (the tests check both
//! against the `serde_json` path on streams of similar events).

use super::event_scan::{inspect_from, EventInfo, TopMark};
use crate::jsonscan::common_prefix;

/// Top-level keys remembered per event (OpenAI chunks have up to seven; later keys are scanned each time).
const MAX_KEYS: usize = 8;

#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    marks: [TopMark; MAX_KEYS],
    n: usize,
    /// The fast scan decided the event (else the marks are unusable).
    complete: bool,
}

impl Marks {
    fn push(&mut self, m: TopMark) {
        if self.n < MAX_KEYS {
            self.marks[self.n] = m;
            self.n += 1;
        }
    }
}

/// One stream's scan state: the key starts of the last event kept and of the event just read.
#[derive(Debug, Default)]
pub struct StreamScan {
    bufs: [Marks; 2],
    /// `bufs[kept]` describes the last kept payload.
    kept: usize,
    /// Scans that resumed past the first key (for the tests).
    #[cfg(test)]
    resumed: usize,
}

impl StreamScan {
    /// Classifies `payload`, or `None` when the `serde_json` path must decide; `last_kept` is the last
    /// payload kept for this stream (the one [`StreamScan::kept`] was called after), if any.
    pub(super) fn inspect(
        &mut self,
        payload: &[u8],
        last_kept: Option<&[u8]>,
    ) -> Option<EventInfo> {
        let (kept, fresh) = {
            let [a, b] = &mut self.bufs;
            if self.kept == 0 {
                (&*a, b)
            } else {
                (&*b, a)
            }
        };
        fresh.n = 0;
        let mut from = None;
        if let (Some(before), true) = (last_kept, kept.complete) {
            let shared = common_prefix(before, payload);
            let usable = kept.marks[..kept.n].partition_point(|m| m.i <= shared);
            if usable > 0 {
                fresh.marks[..usable].copy_from_slice(&kept.marks[..usable]);
                fresh.n = usable;
                from = Some(kept.marks[usable - 1]);
            }
        }
        #[cfg(test)]
        {
            self.resumed += usize::from(from.is_some_and(|m| m.i > 1));
        }
        let info = inspect_from(payload, from, &mut |m| fresh.push(m));
        fresh.complete = info.is_some();
        info
    }

    /// The payload just inspected was kept: it is the one the next event is compared with.
    pub(super) fn kept(&mut self) {
        self.kept = 1 - self.kept;
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng as _};

    use super::super::event_scan::inspect;
    use super::super::openai_event::inspect_serde;
    use super::*;

    /// A chunk of a stream with a random text and ending, sometimes with other keys or cut off.
    fn chunk(rng: &mut impl Rng, id: &str) -> String {
        let text = [
            r#""hello ""#,
            r#""""#,
            "null",
            r#""a\nb""#,
            r#""\u00e9""#,
            "5",
            r#""\ud800""#,
        ][rng.random_range(0..7)];
        let finish = ["null", r#""length""#, r#""stop""#][rng.random_range(0..3)];
        let key = ["content", "reasoning_content", "role"][rng.random_range(0..3)];
        let tail = match rng.random_range(0..6) {
            0 => r#","usage":{"prompt_tokens":2,"completion_tokens":16}"#,
            1 => r#","usage":null"#,
            2 => r#","error":{"message":"x"}"#,
            3 => r#","object":"error""#,
            _ => "",
        };
        let object = ["chat.completion.chunk", "error"][usize::from(rng.random_range(0..10) == 0)];
        let mut c = format!(
            r#"{{"id":"{id}","object":"{object}","created":1764000000,"model":"m","choices":[{{"index":0,"delta":{{"{key}":{text}}},"logprobs":null,"finish_reason":{finish}}}]{tail}}}"#
        );
        if rng.random_range(0..15) == 0 {
            let cut = rng.random_range(0..c.len());
            c.truncate(cut);
        }
        if rng.random_range(0..15) == 0 {
            c = r#"{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":16}}"#.into();
        }
        c
    }

    /// Streams of similar events read through one `StreamScan` (as the client does) give, event by event,
    /// what a scan from the start gives and what the `serde_json` path gives.
    #[test]
    fn resumed_scans_agree_with_full_scans_and_serde() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut resumed = 0;
        let mut events = 0;
        for stream in 0..3000 {
            let id = format!("chatcmpl-{}", stream % 7);
            let mut scan = StreamScan::default();
            let mut last_kept: Option<Vec<u8>> = None;
            for _ in 0..rng.random_range(1..12) {
                let event = chunk(&mut rng, &id).into_bytes();
                let got = scan.inspect(&event, last_kept.as_deref());
                events += 1;
                assert_eq!(
                    got,
                    inspect(&event),
                    "{:?}",
                    String::from_utf8_lossy(&event)
                );
                let info = got.unwrap_or_else(|| inspect_serde(&event));
                if got.is_some() {
                    assert_eq!(info, inspect_serde(&event));
                }
                if info.has_choices {
                    scan.kept();
                    last_kept = Some(event);
                }
            }
            resumed += scan.resumed;
        }
        assert!(resumed * 2 > events, "{resumed} of {events} scans resumed");
    }
}
