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
//! The pickle is protocol 3 (Python reads every protocol; evalscope's own are protocol 4, which only adds
//! framing and memo opcodes, so bytes differ while the unpickled objects are equal).

use base64::Engine as _;
use serde::ser::{Error as _, SerializeSeq as _};
use serde::{Serialize, Serializer};

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

/// The whole list: `payloads()` yields the raw payloads afresh on each call; `text_mask`, when given, marks
/// (by position) the payloads to store as `str`.
struct PayloadList<'m, F> {
    payloads: F,
    text_mask: Option<&'m [bool]>,
}

impl<'p, 'm, F, I> Serialize for PayloadList<'m, F>
where
    F: Fn() -> I,
    I: Iterator<Item = &'p [u8]>,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
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

/// Reusable buffers for encoding `response_messages`; one per writer thread, so steady state allocates
/// nothing beyond the largest response seen.
#[derive(Default)]
pub struct Encoder {
    pickle: Vec<u8>,
    base64: String,
}

impl Encoder {
    /// Returns `base64(pickle.dumps([json.loads(p) for p in payloads()]))`, non-JSON payloads as `str`.
    /// `payloads` must yield the same sequence each time it is called. The result borrows the encoder's
    /// buffer until the next call.
    pub fn encode<'p, F, I>(&mut self, payloads: F) -> &str
    where
        F: Fn() -> I,
        I: Iterator<Item = &'p [u8]>,
    {
        if self.pickle_into(&payloads, None).is_err() {
            // Rare path: find the payloads that are not single JSON values and store those as text.
            let mask: Vec<bool> = payloads()
                .map(|p| serde_json::from_slice::<serde::de::IgnoredAny>(p).is_err())
                .collect();
            if self.pickle_into(&payloads, Some(&mask)).is_err() {
                // Unreachable for validated JSON and plain strings; still leave a well-formed value.
                let all_text = vec![true; mask.len()];
                let _ = self.pickle_into(&payloads, Some(&all_text));
            }
        }
        self.base64.clear();
        base64::engine::general_purpose::STANDARD.encode_string(&self.pickle, &mut self.base64);
        &self.base64
    }

    fn pickle_into<'p, F, I>(
        &mut self,
        payloads: &F,
        text_mask: Option<&[bool]>,
    ) -> serde_pickle::Result<()>
    where
        F: Fn() -> I,
        I: Iterator<Item = &'p [u8]>,
    {
        self.pickle.clear();
        let list = PayloadList {
            payloads,
            text_mask,
        };
        serde_pickle::to_writer(&mut self.pickle, &list, serde_pickle::SerOptions::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(b64: &str) -> serde_json::Value {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("base64");
        serde_pickle::from_slice(&bytes, serde_pickle::DeOptions::new()).expect("pickle")
    }

    #[test]
    fn empty_list() {
        let mut enc = Encoder::default();
        assert_eq!(decode(enc.encode(std::iter::empty)), serde_json::json!([]));
    }

    #[test]
    fn keeps_key_order_and_types() {
        let p: &[u8] =
            br#"{"z":1,"a":[1.5,null,true,false,"x\u00e9\n"],"m":{"k":-3,"big":9007199254740993}}"#;
        let mut enc = Encoder::default();
        let got = decode(enc.encode(|| [p, p].into_iter()));
        let want: serde_json::Value = serde_json::from_slice(p).unwrap();
        assert_eq!(got, serde_json::Value::Array(vec![want.clone(), want]));
        let keys: Vec<&String> = got[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn integers_beyond_i64_stay_python_ints() {
        // serde_pickle cannot read these back into serde_json, so ask Python when it is there.
        let p: &[u8] = br#"[18446744073709551615, -9223372036854775808, 2147483648, -1, 1e3]"#;
        let mut enc = Encoder::default();
        let b64 = enc.encode(|| std::iter::once(p)).to_owned();
        if let Some(out) = super::super::tests::python(super::super::tests::PY_UNPICKLE, &b64) {
            assert_eq!(
                out,
                "[[18446744073709551615, -9223372036854775808, 2147483648, -1, 1000.0]]"
            );
        }
    }

    #[test]
    fn invalid_payloads_become_strings() {
        let good: &[u8] = br#"{"a":1}"#;
        let items: [&[u8]; 5] = [good, b"[DONE]", br#"{"a":1} trailing"#, b"\xff\xfe", good];
        let mut enc = Encoder::default();
        let got = decode(enc.encode(|| items.into_iter()));
        assert_eq!(
            got,
            serde_json::json!([{"a": 1}, "[DONE]", "{\"a\":1} trailing", "\u{fffd}\u{fffd}", {"a": 1}])
        );
    }
}
