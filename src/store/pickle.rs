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
//! The common case takes a direct path ([`super::fast_pickle`]): the same opcodes written straight from the
//! JSON bytes; a payload it does not handle exactly goes through the serde path above, one payload at a time.
//!
//! The pickle is protocol 3 (Python reads every protocol; evalscope's own are protocol 4, which only adds
//! framing and memo opcodes, so bytes differ while the unpickled objects are equal).

use serde::ser::Error as _;
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
}

/// Pickle framing and list opcodes (protocol 3), as serde_pickle writes them.
const PROTO_3: [u8; 2] = [0x80, 3];
const STOP: u8 = b'.';
const EMPTY_LIST: u8 = b']';
const MARK: u8 = b'(';
const APPENDS: u8 = b'e';

impl Encoder {
    /// Returns `base64(pickle.dumps([json.loads(p) for p in payloads()]))`, non-JSON payloads as `str`.
    /// `payloads` must yield the same sequence each time it is called. The result borrows the encoder's
    /// buffer until the next call.
    pub fn encode<'p, F, I>(&mut self, payloads: F) -> &str
    where
        F: Fn() -> I,
        I: Iterator<Item = &'p [u8]>,
    {
        let out = &mut self.pickle;
        out.clear();
        out.extend_from_slice(&PROTO_3);
        out.push(EMPTY_LIST);
        let any = payloads().next().is_some();
        if any {
            out.push(MARK);
        }
        let mut batch = 0;
        for bytes in payloads() {
            let start = out.len();
            if super::fast_pickle::encode(bytes, out, &mut self.scratch).is_err() {
                out.truncate(start);
                let mut ser =
                    serde_pickle::Serializer::new(&mut *out, serde_pickle::SerOptions::new());
                let as_json = Payload {
                    bytes,
                    as_text: false,
                };
                if as_json.serialize(&mut ser).is_err() {
                    // Not one valid JSON value: stored as a Python `str` of its text.
                    out.truncate(start);
                    super::fast_pickle::put_str(out, String::from_utf8_lossy(bytes).as_bytes());
                }
            }
            batch += 1;
            if batch == 1000 {
                out.extend_from_slice(&[APPENDS, MARK]);
                batch = 0;
            }
        }
        if any {
            out.push(APPENDS);
        }
        out.push(STOP);
        super::b64::encode_into(&self.pickle, &mut self.base64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(b64: &str) -> serde_json::Value {
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64)
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

    /// The direct path must write exactly the bytes the serde path writes.
    #[test]
    fn direct_path_matches_the_serde_path_byte_for_byte() {
        let big_list = format!(
            "[{}]",
            (0..2500)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let big_map = format!(
            "{{{}}}",
            (0..1500)
                .map(|i| format!("\"k{i}\": {i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let too_deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let corpus: Vec<&[u8]> = vec![
            br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"content":"hello "},"logprobs":null,"finish_reason":null}]}"#,
            br#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}"#,
            br#" { "a" : [ 1 , -2 , 3.5 , -0 , 0 , -0.0 , 1e3 , 1E-7 , 2147483647 , 2147483648 , -2147483648 , -2147483649 ] } "#,
            br#"[9223372036854775807, 9223372036854775808, 18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809, 123456789012345678, 1234567890123456789]"#,
            r#"["esc \" \\ \/ \b \f \n \r \t", "\u00e9\u4e2d\ud83d\ude00", "raw é 中 😀", ""]"#.as_bytes(),
            br#"{"dup": 1, "dup": 2, "e": {}, "l": [], "t": true, "f": false, "n": null}"#,
            br#"[0.1, 0.30000000000000004, 1.7976931348623157e308, 5e-324, 1e300, -1e-300]"#,
            big_list.as_bytes(),
            big_map.as_bytes(),
            deep.as_bytes(),
            too_deep.as_bytes(),
            // Not valid JSON, or not handled by the direct path: the serde path decides.
            b"[DONE]",
            br#"{"a":1} trailing"#,
            b"\xff\xfe",
            b"[\"\xff\"]",
            br#"["\ud800"]"#,
            br#"["\udc00x"]"#,
            b"[\"raw\ncontrol\"]",
            br#"[01]"#,
            br#"[1,]"#,
            br#"{"a" 1}"#,
            br#"[1.2.3]"#,
            br#"[-]"#,
            br#"["\x"]"#,
            br#"[tru]"#,
            b"",
            b"   ",
        ];
        let mut enc = Encoder::default();
        for p in &corpus {
            let got = enc.encode(|| std::iter::once(*p)).to_owned();
            let want = encode_reference(|| std::iter::once(*p));
            assert!(
                got == want,
                "payload {:?}",
                String::from_utf8_lossy(&p[..p.len().min(80)])
            );
        }
        // Together (the serde-only path stored a whole list as text when a payload passed its syntax check
        // but failed decoding, e.g. a lone surrogate escape; such payloads are left out here).
        let agree: Vec<&[u8]> = corpus
            .iter()
            .copied()
            .filter(|p| {
                serde_json::from_slice::<serde::de::IgnoredAny>(p).is_err()
                    == serde_json::from_slice::<serde_json::Value>(p).is_err()
            })
            .collect();
        assert!(agree.len() > 20);
        let got = enc.encode(|| agree.iter().copied()).to_owned();
        assert!(
            got == encode_reference(|| agree.iter().copied()),
            "combined list differs"
        );
        // A number beyond f64 passes a syntax check but not decoding: alone it is stored as text either
        // way (the serde-only path stored a whole list containing it as text).
        let huge: &[u8] = b"[1e400]";
        let got = enc.encode(|| std::iter::once(huge)).to_owned();
        assert_eq!(got, encode_reference(|| std::iter::once(huge)));
        let many: Vec<&[u8]> = vec![br#"{"a":1}"#; 2100];
        let got = enc.encode(|| many.iter().copied()).to_owned();
        assert_eq!(got, encode_reference(|| many.iter().copied()));
        let none: Vec<&[u8]> = Vec::new();
        let got = enc.encode(|| none.iter().copied()).to_owned();
        assert_eq!(got, encode_reference(|| none.iter().copied()));
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
