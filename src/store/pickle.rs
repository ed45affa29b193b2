//! `response_messages` encoding: `base64(pickle.dumps(list_of_payloads))`, as evalscope writes it.
//!
//! evalscope keeps the parsed JSON payloads of a response (the SSE chunks that carry `choices`, or the whole
//! non-stream body) as a Python list and stores `base64.b64encode(pickle.dumps(list))`; its readers do
//! `pickle.loads(base64.b64decode(s))`. We produce the same Python objects without building a JSON tree:
//! each raw payload is streamed from `serde_json`'s deserializer straight into `serde_pickle`'s serializer
//! (`serde_transcode`), so dict keys keep the server's order, JSON integers become Python `int`, fractions
//! `float`, `null` `None`, booleans `bool`.
//!
//! A payload that is not one valid JSON value (bad syntax, trailing bytes, lone surrogate escapes, nesting
//! deeper than 128, numbers beyond `f64`) is stored as a Python `str` holding its (lossily decoded) text
//! instead, so a misbehaving server can never make the writer fail. Integers beyond `u64` arrive as `float`
//! (serde_json without `arbitrary_precision`), where Python would keep an `int`.
//!
//! The common case takes a direct path ([`super::fast_pickle`]): the same Python objects written straight
//! from the JSON bytes in protocol 4's compact opcodes, each short string once per row and referenced after
//! that ([`super::memo`]); a payload it does not handle exactly goes through the serde path above, one
//! payload at a time, inside the same list.
//!
//! The pickle is protocol 4, as Python 3.8+ and evalscope write theirs, without the optional framing; the
//! bytes differ from Python's own while the unpickled objects are equal (the tests decode both ways).

use serde::ser::Error as _;
use serde::{Serialize, Serializer};

use super::fast_pickle::{self, Checkpoint};
use crate::jsonscan::common_prefix;

/// One raw payload, pickled as the Python object its JSON denotes, or as a `str` when `as_text` is set.
struct Payload<'a> {
    bytes: &'a [u8],
    as_text: bool,
}

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.as_text {
            return serializer.serialize_str(&String::from_utf8_lossy(self.bytes));
        }
        let mut de = serde_json::Deserializer::from_slice(self.bytes);
        let ok = serde_transcode::transcode(&mut de, serializer)?;
        de.end().map_err(S::Error::custom)?;
        Ok(ok)
    }
}

/// The whole list through the serde path: `payloads()` yields the raw payloads afresh on each call;
/// `text_mask`, when given, marks (by position) the payloads to store as `str`. The reference the direct
/// path is checked against.
#[cfg(test)]
struct PayloadList<'m, F> {
    payloads: F,
    text_mask: Option<&'m [bool]>,
}

#[cfg(test)]
impl<'p, 'm, F, I> Serialize for PayloadList<'m, F>
where
    F: Fn() -> I,
    I: Iterator<Item = &'p [u8]>,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq as _;
        let mut seq = serializer.serialize_seq(Some((self.payloads)().count()))?;
        for (i, bytes) in (self.payloads)().enumerate() {
            let as_text = self
                .text_mask
                .is_some_and(|m| m.get(i).copied().unwrap_or(true));
            seq.serialize_element(&Payload { bytes, as_text })?;
        }
        seq.end()
    }
}

/// `base64(pickle.dumps(list))` through the serde path only, as the store wrote it before the direct path.
#[cfg(test)]
pub(super) fn encode_reference<'p, F, I>(payloads: F) -> String
where
    F: Fn() -> I,
    I: Iterator<Item = &'p [u8]>,
{
    let pickle = |mask: Option<&[bool]>| {
        let mut out = Vec::new();
        let list = PayloadList {
            payloads: &payloads,
            text_mask: mask,
        };
        serde_pickle::to_writer(&mut out, &list, serde_pickle::SerOptions::new()).map(|()| out)
    };
    let bytes = pickle(None).unwrap_or_else(|_| {
        let mask: Vec<bool> = payloads()
            .map(|p| serde_json::from_slice::<serde::de::IgnoredAny>(p).is_err())
            .collect();
        pickle(Some(&mask)).unwrap_or_else(|_| {
            let all_text = vec![true; mask.len()];
            pickle(Some(&all_text)).expect("text payloads always pickle")
        })
    });
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes)
}

/// Reusable buffers for encoding `response_messages`; one per writer thread, so steady state allocates
/// nothing beyond the largest response seen.
#[derive(Default)]
pub struct Encoder {
    pickle: Vec<u8>,
    scratch: Vec<u8>,
    base64: Vec<u8>,
    memo: super::memo::Memo,
    /// The token starts of the last payload that took the direct path.
    checkpoints: Vec<Checkpoint>,
    /// Payloads that took over a prefix (for the tests).
    #[cfg(test)]
    pub(super) resumed: usize,
}

/// Pickle framing and list opcodes.
const PROTO_4: [u8; 2] = [0x80, 4];
const STOP: u8 = b'.';
const EMPTY_LIST: u8 = b']';
const MARK: u8 = b'(';
const APPENDS: u8 = b'e';

impl Encoder {
    /// Returns `base64(pickle.dumps([json.loads(p) for p in payloads]))` (ASCII), non-JSON payloads as
    /// `str`. The result borrows the encoder's buffer until the next call.
    pub fn encode<'p>(&mut self, payloads: impl IntoIterator<Item = &'p [u8]>) -> &[u8] {
        self.pickle(payloads);
        super::b64::encode_into(&self.pickle, &mut self.base64)
    }

    /// The pickle itself (protocol 4: the opcodes Python 3.8+ writes by default, without framing).
    ///
    /// The chunks of a stream differ in a few bytes (the text, `finish_reason`); each payload takes over
    /// the pickle of the longest run of leading bytes it shares with the previous one, up to a token start
    /// where that one had added no memo entry, and is parsed from there on.
    fn pickle<'p>(&mut self, payloads: impl IntoIterator<Item = &'p [u8]>) -> &[u8] {
        let out = &mut self.pickle;
        out.clear();
        out.extend_from_slice(&PROTO_4);
        out.push(EMPTY_LIST);
        self.memo.reset();
        let cps = &mut self.checkpoints;
        cps.clear();
        // The previous payload and where its pickle starts, when it took the direct path.
        let mut prev: Option<(&[u8], usize)> = None;
        let mut any = false;
        for bytes in payloads {
            if !any {
                out.push(MARK);
                any = true;
            }
            let start = out.len();
            let mark = self.memo.mark();
            let from = prev.and_then(|(before, at)| {
                let shared = common_prefix(before, bytes);
                let usable = cps
                    .partition_point(|c| c.i <= shared)
                    .min(cps.partition_point(|c| c.memo_added == 0));
                let c = *cps.get(usable.checked_sub(1)?)?;
                cps.truncate(usable);
                out.extend_from_within(at..at + c.out_len);
                Some(c)
            });
            if from.is_none() {
                cps.clear();
            }
            #[cfg(test)]
            {
                self.resumed += usize::from(from.is_some_and(|c| c.i > 0));
            }
            let direct =
                fast_pickle::encode(bytes, out, &mut self.scratch, &mut self.memo, from, cps);
            if direct.is_ok() {
                prev = Some((bytes, start));
                continue;
            }
            prev = None;
            out.truncate(start);
            self.memo.rollback(mark);
            let mut ser = serde_pickle::Serializer::new(&mut *out, serde_pickle::SerOptions::new());
            let as_json = Payload {
                bytes,
                as_text: false,
            };
            if as_json.serialize(&mut ser).is_err() {
                // Not one valid JSON value: stored as a Python `str` of its text.
                out.truncate(start);
                fast_pickle::put_str(out, String::from_utf8_lossy(bytes).as_bytes());
            }
        }
        if any {
            out.push(APPENDS);
        }
        out.push(STOP);
        &self.pickle
    }
}
