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
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-5". When the value lies exactly halfway
    // between two such strings, Rust rounds the last digit up where Python (David Gay's dtoa) takes the
    // correctly rounded one (ties to even): 1042310483007662.25 is "…662.2" in Python. The correctly
    // rounded string of the same length is Python's whenever it reads back as `v`.
    let mut sci = format!("{v:e}");
    let significant = sci
        .split('e')
        .next()
        .map_or(0, |m| m.bytes().filter(u8::is_ascii_digit).count());
    // A tie needs the digit spacing to be about one ulp, so only 16- and 17-digit strings can be ties.
    if significant >= 16 {
        let nearest = format!("{v:.*e}", significant - 1);
        if nearest != sci && nearest.parse::<f64>() == Ok(v) {
            sci = nearest;
        }
    }
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exp) {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let frac = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        return format!("{sign}{frac}e{exp_sign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
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

/// Appends Python's `repr(v)` to `out` (the store's pickle encoder writes float lists with it).
pub fn write_float_repr(out: &mut String, v: f64) {
    out.push_str(&float_repr(v));
}

/// Appends `json.dumps(list_of_floats)`: `[0.01, 0.015]`, `[]` when empty.
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
        w.write_all(float_repr(v).as_bytes())
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
