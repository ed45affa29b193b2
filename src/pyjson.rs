//! JSON exactly as Python's `json.dumps(..., ensure_ascii=False)` writes it.
//!
//! evalscope stores and sends `json.dumps(body, ensure_ascii=False)` (separators `", "` and `": "`) and
//! writes its result files with `indent=4`. Two things differ from serde_json's defaults: the separators,
//! and floats, which Python writes in `repr` form (`1e-05`, `1e+16`, `512.0`, `NaN`). String escaping is the
//! same (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other control characters as `\u00XX`; non-ASCII raw).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// Python's `repr(float)`: shortest round-trip digits, exponent form below 1e-4 and from 1e16 on.
pub fn float_repr(v: f64) -> String {
    let mut out = String::with_capacity(24);
    write_float_repr(&mut out, v);
    out
}

/// A fixed buffer for formatting one number without touching the heap.
struct StackBuf {
    buf: [u8; 48],
    len: usize,
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Appends Python's `repr(v)` to `out`, without allocating.
pub fn write_float_repr(out: &mut String, v: f64) {
    // Where Python's repr is positional (decimal exponent -4 to 15), ryu's shortest form is already
    // character for character the same (checked against [`FloatRepr`] in the tests): the common case of
    // the store's chunk times and most latencies, without the digit shuffling.
    if (1e-4..1e16).contains(&v.abs()) {
        out.push_str(ryu::Buffer::new().format_finite(v));
        return;
    }
    out.push_str(FloatRepr::new(v).as_str());
}

/// Python's `repr(v)` held in a fixed buffer.
struct FloatRepr(StackBuf);

impl FloatRepr {
    fn new(v: f64) -> FloatRepr {
        use std::fmt::Write as _;
        let mut out = StackBuf {
            buf: [0; 48],
            len: 0,
        };
        let mut push = |s: &str| out.write_str(s).expect("a float repr fits 48 bytes");
        if v.is_nan() {
            push("NaN");
        } else if v.is_infinite() {
            push(if v > 0.0 { "Infinity" } else { "-Infinity" });
        } else if v == 0.0 {
            push(if v.is_sign_negative() { "-0.0" } else { "0.0" });
        } else {
            // ryu gives the shortest round-trip digits (as Python's repr does), in one of two shapes:
            // "-1.2345e-5" or "-0.00012345" / "123.45"; reduce both to digits and a decimal exponent.
            let mut ryu_buf = ryu::Buffer::new();
            let text = ryu_buf.format_finite(v);
            let text = match text.strip_prefix('-') {
                Some(t) => {
                    push("-");
                    t
                }
                None => text,
            };
            let (mantissa, exp_part) = match text.split_once('e') {
                Some((m, e)) => (m, e.parse::<i32>().expect("ryu exponent")),
                None => (text, 0),
            };
            let mut digit_buf = [0u8; 24];
            let mut n = 0;
            // Decimal exponent of the first significant digit.
            let mut exp = exp_part;
            let int_len = mantissa.find('.').unwrap_or(mantissa.len()) as i32;
            let mut leading = true;
            let mut first_pos = 0i32;
            for (pos, b) in mantissa.bytes().filter(|b| *b != b'.').enumerate() {
                if leading && b == b'0' {
                    continue;
                }
                if leading {
                    first_pos = pos as i32;
                    leading = false;
                }
                digit_buf[n] = b;
                n += 1;
            }
            exp += int_len - 1 - first_pos;
            while n > 1 && digit_buf[n - 1] == b'0' {
                n -= 1;
            }
            let digits = std::str::from_utf8(&digit_buf[..n]).expect("ASCII digits");
            if !(-4..16).contains(&exp) {
                push(&digits[..1]);
                if digits.len() > 1 {
                    push(".");
                    push(&digits[1..]);
                }
                push(if exp < 0 { "e-" } else { "e+" });
                let e = exp.unsigned_abs();
                if e < 10 {
                    push("0");
                }
                let mut eb = StackBuf {
                    buf: [0; 48],
                    len: 0,
                };
                write!(eb, "{e}").expect("fits");
                push(std::str::from_utf8(&eb.buf[..eb.len]).expect("ASCII"));
            } else {
                let point = exp + 1; // digits before the decimal point
                if point <= 0 {
                    push("0.");
                    for _ in 0..-point {
                        push("0");
                    }
                    push(digits);
                } else if point as usize >= digits.len() {
                    push(digits);
                    for _ in 0..point as usize - digits.len() {
                        push("0");
                    }
                    push(".0");
                } else {
                    let (int, frac) = digits.split_at(point as usize);
                    push(int);
                    push(".");
                    push(frac);
                }
            }
        }
        FloatRepr(out)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0.buf[..self.0.len]).expect("ASCII")
    }
}

/// Appends `json.dumps(values)` for a list of floats (`[0.1, 2.0]`, `[]`) to `out`, without allocating
/// beyond `out`'s growth.
pub fn write_float_list(out: &mut String, values: impl IntoIterator<Item = f64>) {
    out.push('[');
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_float_repr(out, v);
    }
    out.push(']');
}

/// Python's `round(v, ndigits)` for floats: the correctly rounded decimal value, read back as a float.
pub fn round(v: f64, ndigits: u32) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let s = format!("{:.*}", ndigits as usize, v);
    s.parse().unwrap_or(v)
}

/// A serde_json formatter with Python's separators, float repr and optional indentation.
#[derive(Debug, Clone)]
pub struct PyFormatter {
    indent: Option<&'static [u8]>,
    depth: usize,
    has_value: bool,
    nan_for_null: bool,
}

impl PyFormatter {
    /// `json.dumps(v, ensure_ascii=False)`: one line, `", "` and `": "`.
    pub fn compact() -> Self {
        PyFormatter {
            indent: None,
            depth: 0,
            has_value: false,
            nan_for_null: false,
        }
    }

    /// `json.dump(v, f, indent=4, ensure_ascii=False)`.
    pub fn indent4() -> Self {
        PyFormatter {
            indent: Some(b"    "),
            ..Self::compact()
        }
    }

    /// `json.dump(v, f, indent=2, ensure_ascii=False)`.
    pub fn indent2() -> Self {
        PyFormatter {
            indent: Some(b"  "),
            ..Self::compact()
        }
    }

    /// serde_json turns non-finite floats into `null` before a formatter sees them; with this set, `null`
    /// is written as Python's `NaN`. Only for documents that have no real nulls (the percentile table).
    pub fn nan_for_null(mut self) -> Self {
        self.nan_for_null = true;
        self
    }

    fn newline_indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        if let Some(unit) = self.indent {
            w.write_all(b"\n")?;
            for _ in 0..self.depth {
                w.write_all(unit)?;
            }
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, b: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, b: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline_indent(w)?;
        }
        self.has_value = true;
        w.write_all(b)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(if self.indent.is_some() { b"," } else { b", " })?;
        }
        self.newline_indent(w)
    }
}

impl Formatter for PyFormatter {
    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.nan_for_null { b"NaN" } else { b"null" })
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        w.write_all(FloatRepr::new(v).as_str().as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        self.write_f64(w, v as f64)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Serialises `value` with `formatter`.
pub fn to_string_with<T: Serialize + ?Sized>(value: &T, formatter: PyFormatter) -> String {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut ser)
        .expect("serialising to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `json.dumps(value, ensure_ascii=False)`.
pub fn dumps<T: Serialize + ?Sized>(value: &T) -> String {
    to_string_with(value, PyFormatter::compact())
}

/// `json.dumps(value, indent=4, ensure_ascii=False)`.
pub fn dumps_indent4<T: Serialize + ?Sized>(value: &T) -> String {
    to_string_with(value, PyFormatter::indent4())
}

#[cfg(test)]
mod tests {
    use rand::{Rng as _, SeedableRng as _};

    #[test]
    fn the_positional_fast_path_matches_the_general_repr() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut fast = String::new();
        let mut check = |v: f64| {
            fast.clear();
            super::write_float_repr(&mut fast, v);
            assert_eq!(fast, super::FloatRepr::new(v).as_str(), "{v:e}");
        };
        for _ in 0..200_000 {
            // Every exponent around the fast path's edges, full-precision and short mantissas.
            let exp = rng.random_range(-8..20);
            let m: f64 = rng.random_range(1.0..10.0);
            let v = m * 10f64.powi(exp);
            check(v);
            check(-v);
            check((v * 1e3).round() / 1e3);
            check(f64::from_bits(rng.random::<u64>()));
        }
        for v in [
            1e-4,
            1e16,
            9.999_999_999_999_998e15,
            0.000_099_999_999_999_999_99,
            123.0,
            0.5,
            1e15,
        ] {
            check(v);
            check(-v);
            check(f64::from_bits(v.to_bits() + 1));
            check(f64::from_bits(v.to_bits() - 1));
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    // The tie cases are exact binary values written in full.
    #[allow(clippy::excessive_precision)]
    fn float_repr_matches_python() {
        // Expected strings are Python 3's repr() of the same floats.
        let cases = [
            (0.0, "0.0"),
            (512.0, "512.0"),
            (0.1, "0.1"),
            (1e-05, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-07, "1.5e-07"),
            (1e16, "1e+16"),
            (1.2345e16, "1.2345e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (123456.789, "123456.789"),
            (-2.5, "-2.5"),
            (17.3229, "17.3229"),
            (f64::NAN, "NaN"),
            // Two shortest strings tie here; Python takes the even digit.
            (1658206780088562.2, "1658206780088562.2"),
            // Exactly halfway between two shortest strings: Python rounds to even (found by fuzzing).
            (1042310483007662.25, "1042310483007662.2"),
            (-662489642122839.25, "-662489642122839.2"),
            (-21635145859748.8125, "-21635145859748.812"),
        ];
        for (v, want) in cases {
            assert_eq!(float_repr(v), want, "repr({v:?})");
        }
    }

    #[test]
    fn float_list_matches_dumps() {
        let v = vec![0.1, 1e-05, 12345.678901234, -3.0, 1e16];
        let mut out = String::new();
        write_float_list(&mut out, v.iter().copied());
        assert_eq!(out, dumps(&v));
        let mut empty = String::new();
        write_float_list(&mut empty, std::iter::empty());
        assert_eq!(empty, "[]");
        for v in [
            5e-324,
            1.7976931348623157e308,
            0.30000000000000004,
            123e-20,
            1e15,
            1e-4,
        ] {
            assert_eq!(float_repr(v), float_repr_reference(v), "{v:e}");
        }
        // Many magnitudes and digit counts: round-trips, as short as the standard library's shortest, and
        // laid out alike (the two may differ in the last digit where two shortest strings tie: Python, like
        // ryu, then takes the even one).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = (x % 100_000_000) as f64 / 10f64.powi((x % 23) as i32 - 8);
            for v in [f64::from_bits(x), w] {
                if !v.is_finite() {
                    continue;
                }
                let ours = float_repr(v);
                let reference = float_repr_reference(v);
                assert_eq!(ours.parse::<f64>().unwrap(), v, "{ours}");
                assert_eq!(ours.len(), reference.len(), "{ours} vs {reference}");
                let same_but_last = ours
                    .bytes()
                    .zip(reference.bytes())
                    .filter(|(a, b)| a != b)
                    .count();
                assert!(same_but_last <= 1, "{ours} vs {reference}");
            }
        }
    }

    /// The straightforward (allocating) formulation, to check the buffered one against.
    fn float_repr_reference(v: f64) -> String {
        let sci = format!("{v:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let (sign, mantissa) = match mantissa.strip_prefix('-') {
            Some(m) => ("-", m),
            None => ("", mantissa),
        };
        let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
        if !(-4..16).contains(&exp) {
            let frac = if digits.len() > 1 {
                format!("{}.{}", &digits[..1], &digits[1..])
            } else {
                digits.clone()
            };
            let s = if exp < 0 { '-' } else { '+' };
            return format!("{sign}{frac}e{s}{:02}", exp.abs());
        }
        let point = exp + 1;
        if point <= 0 {
            format!("{sign}0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!(
                "{sign}{}{}.0",
                digits,
                "0".repeat(point as usize - digits.len())
            )
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{sign}{int}.{frac}")
        }
    }

    #[test]
    fn round_matches_python() {
        assert_eq!(round(0.115123, 4), 0.1151);
        assert_eq!(round(62.0749, 2), 62.07);
        assert_eq!(round(2.675, 2), 2.67); // 2.675 is 2.67499999… in binary, as in Python
        assert_eq!(round(-1.0, 4), -1.0);
    }

    #[test]
    fn compact_uses_python_separators() {
        let v = json!({"messages": [{"role": "user", "content": "hé \"q\"\n"}], "model": "m",
                       "max_tokens": 2048, "stream": true, "temperature": 0.0, "x": null, "e": [], "o": {}});
        assert_eq!(
            dumps(&v),
            r#"{"messages": [{"role": "user", "content": "hé \"q\"\n"}], "model": "m", "max_tokens": 2048, "stream": true, "temperature": 0.0, "x": null, "e": [], "o": {}}"#
        );
    }

    #[test]
    fn indent4_matches_python() {
        let v = json!({"a": 1, "b": {"c": [1.0, 2]}, "d": {}, "e": []});
        let want = "{\n    \"a\": 1,\n    \"b\": {\n        \"c\": [\n            1.0,\n            2\n        ]\n    },\n    \"d\": {},\n    \"e\": []\n}";
        assert_eq!(dumps_indent4(&v), want);
    }

    #[test]
    fn nan_for_null_writes_python_nan() {
        let v = vec![f64::NAN, 1.5];
        assert_eq!(
            to_string_with(&v, PyFormatter::indent4().nan_for_null()),
            "[\n    NaN,\n    1.5\n]"
        );
    }
}
