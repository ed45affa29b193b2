//! Number formatting for the human-readable outputs, exactly as evalscope's metric semantics render them.
//!
//! evalscope formats every table cell through `format_perf_value`: the value is taken as
//! `Decimal(str(v))` (Python's shortest repr, so `2.675` stays a decimal tie), rounded to the unit's
//! precision with ties going toward +∞ (`floor(x + 0.5)`), printed in its shortest exact decimal form
//! (`0.230` → `0.23`, `7.0` → `7`), with a value that rounds to zero printed as `0` and a missing or
//! non-finite value printed as `—`. The precision and the optional unit suffix depend on the metric
//! key ([`unit_for_key`]).

use crate::pyjson::float_repr;

/// What evalscope prints in place of a missing (`None`) or non-finite value.
pub const MISSING: &str = "—";

/// The display rule of one metric: decimals and unit suffix (evalscope's semantics baselines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Latency in seconds: 3 decimals, `s`.
    Seconds,
    /// Latency in milliseconds: 2 decimals, `ms`.
    Millis,
    /// Token throughput: 2 decimals, `tok/s`.
    TokPerSec,
    /// Request throughput or request rate: 2 decimals, `req/s`.
    ReqPerSec,
    /// `Test Duration (s)` / total test time: 2 decimals, `s`.
    Duration,
    /// Counts (requests, concurrency, per-request token counts): 0 decimals.
    Count,
    /// Average token counts per request: 1 decimal.
    AvgTokens,
    /// A value already on a 0–100 scale: 1 decimal, `%` joined without a space.
    Percent,
    /// Anything evalscope has no semantics for: 4 decimals.
    Raw,
}

impl Unit {
    /// Decimal places this unit rounds to.
    pub fn decimals(self) -> u32 {
        match self {
            Unit::Seconds => 3,
            Unit::Millis | Unit::TokPerSec | Unit::ReqPerSec | Unit::Duration => 2,
            Unit::Count => 0,
            Unit::AvgTokens | Unit::Percent => 1,
            Unit::Raw => 4,
        }
    }

    /// The unit text printed after the number when a cell includes its unit.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Seconds | Unit::Duration => "s",
            Unit::Millis => "ms",
            Unit::TokPerSec => "tok/s",
            Unit::ReqPerSec => "req/s",
            Unit::Percent => "%",
            Unit::Count | Unit::AvgTokens | Unit::Raw => "",
        }
    }

    /// The value alone (`include_unit=False`): `fmt_num(v, self.decimals())`.
    pub fn fmt(self, v: f64) -> String {
        fmt_num(v, self.decimals())
    }

    /// The value with its unit (`include_unit=True`): `96.3 tok/s`, `26.58 s`, `100%`; `—` stays bare.
    pub fn fmt_with_unit(self, v: f64) -> String {
        let text = self.fmt(v);
        match self.suffix() {
            _ if text == MISSING => text,
            "" => text,
            "%" => format!("{text}%"),
            suffix => format!("{text} {suffix}"),
        }
    }
}

/// The display unit evalscope uses for a summary key (`Avg TTFT (ms)`) or percentile column key
/// (`Input tokens`); unknown keys fall back to [`Unit::Raw`] as evalscope's diagnostic fallback does.
pub fn unit_for_key(key: &str) -> Unit {
    match key {
        "Test Duration (s)" => Unit::Duration,
        "Concurrency"
        | "Total Requests"
        | "Success Requests"
        | "Failed Requests"
        | "Stream Requests"
        | "Non-Stream Requests"
        | "Input tokens"
        | "Output tokens" => Unit::Count,
        "Request Rate (req/s)" | "Req Throughput (req/s)" => Unit::ReqPerSec,
        "Avg Latency (s)" | "Latency (s)" => Unit::Seconds,
        "Avg Input Tokens" | "Avg Output Tokens" | "Avg Turns/Request" => Unit::AvgTokens,
        "KV Cache Hit Rate (%)" => Unit::Percent,
        k if k.ends_with("(ms)") => Unit::Millis,
        k if k.ends_with("(tok/s)") => Unit::TokPerSec,
        _ => Unit::Raw,
    }
}

/// Formats `v` rounded to `decimals` places the way evalscope does (see the module docs):
/// `fmt_num(2.675, 2) == "2.68"`, `fmt_num(96.297, 2) == "96.3"`, `fmt_num(0.0, 3) == "0"`,
/// `fmt_num(f64::NAN, 2) == "—"`.
pub fn fmt_num(v: f64, decimals: u32) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    let (negative, digits, exp) = parse_repr(&float_repr(v));
    // value = ±digits × 10^exp; scale so the kept part is an integer: ±digits × 10^(exp + decimals).
    let shift = exp + decimals as i64;
    let mut kept: Vec<u8> = if shift >= 0 {
        let mut d = digits;
        d.extend(std::iter::repeat_n(b'0', shift as usize));
        d
    } else {
        let drop = (-shift) as usize;
        let (kept, dropped) = if drop >= digits.len() {
            let mut dropped = vec![b'0'; drop - digits.len()];
            dropped.extend_from_slice(&digits);
            (vec![b'0'], dropped)
        } else {
            let (k, d) = digits.split_at(digits.len() - drop);
            (k.to_vec(), d.to_vec())
        };
        // floor(x + 0.5): a positive tie rounds up in magnitude, a negative tie rounds toward zero.
        let first = dropped.first().copied().unwrap_or(b'0');
        let rest_nonzero = dropped.iter().skip(1).any(|&c| c != b'0');
        let up = if negative {
            first > b'5' || (first == b'5' && rest_nonzero)
        } else {
            first >= b'5'
        };
        let mut kept = kept;
        if up {
            increment(&mut kept);
        }
        kept
    };
    // Drop leading zeros; an all-zero result prints as "0" (never "-0" or "0.000").
    let start = kept.iter().position(|&c| c != b'0').unwrap_or(kept.len());
    kept.drain(..start);
    if kept.is_empty() {
        return "0".to_string();
    }
    let decimals = decimals as usize;
    if kept.len() <= decimals {
        let mut padded = vec![b'0'; decimals + 1 - kept.len()];
        padded.extend_from_slice(&kept);
        kept = padded;
    }
    let (int_part, frac_part) = kept.split_at(kept.len() - decimals);
    let frac_end = frac_part
        .iter()
        .rposition(|&c| c != b'0')
        .map_or(0, |i| i + 1);
    let mut out = String::with_capacity(kept.len() + 2);
    if negative {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(int_part).expect("ASCII digits"));
    if frac_end > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&frac_part[..frac_end]).expect("ASCII digits"));
    }
    out
}

/// Splits a Python float repr (`-1.5e-05`, `2.675`, `512.0`) into (negative, digits, exponent) with
/// value = ±digits × 10^exponent.
fn parse_repr(repr: &str) -> (bool, Vec<u8>, i64) {
    let (negative, body) = match repr.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, repr),
    };
    let (mantissa, mut exp) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (body, 0),
    };
    let mut digits = Vec::with_capacity(mantissa.len());
    if let Some((int, frac)) = mantissa.split_once('.') {
        digits.extend_from_slice(int.as_bytes());
        digits.extend_from_slice(frac.as_bytes());
        exp -= frac.len() as i64;
    } else {
        digits.extend_from_slice(mantissa.as_bytes());
    }
    (negative, digits, exp)
}

/// Adds one to a big-endian ASCII digit string.
fn increment(digits: &mut Vec<u8>) {
    for c in digits.iter_mut().rev() {
        if *c == b'9' {
            *c = b'0';
        } else {
            *c += 1;
            return;
        }
    }
    digits.insert(0, b'1');
}

/// Inserts `,` every three digits into the integer part of a plain decimal string (`-1234.5` → `-1,234.5`).
fn group_thousands(plain: &str) -> String {
    let (sign, rest) = match plain.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", plain),
    };
    let (int, tail) = match rest.find('.') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut grouped = String::with_capacity(int.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}{tail}")
}

/// Python's `format(v, ',')` for a float: repr digits with thousands separators (`2560.0` → `2,560.0`).
pub fn py_comma(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let repr = float_repr(v);
    if repr.contains('e') {
        repr
    } else {
        group_thousands(&repr)
    }
}

/// Python's `format(v, ',.Nf')`: fixed decimals (ties to even on the exact binary value) with
/// thousands separators (`1896.0` at 0 decimals → `1,896`).
pub fn py_comma_fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return py_comma(v);
    }
    group_thousands(&format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_up_on_the_shortest_repr() {
        assert_eq!(fmt_num(0.125, 2), "0.13");
        assert_eq!(fmt_num(2.675, 2), "2.68"); // str(2.675) == "2.675", a decimal tie
        assert_eq!(fmt_num(1.005, 2), "1.01");
        assert_eq!(fmt_num(96.297, 2), "96.3");
        assert_eq!(fmt_num(12.5, 0), "13");
        assert_eq!(fmt_num(0.5, 0), "1");
        assert_eq!(fmt_num(9.9999, 2), "10");
        assert_eq!(fmt_num(999.999, 2), "1000");
    }

    #[test]
    fn strips_zeros_and_collapses_zero() {
        assert_eq!(fmt_num(0.0, 2), "0");
        assert_eq!(fmt_num(-0.0, 2), "0");
        assert_eq!(fmt_num(0.0004, 3), "0");
        assert_eq!(fmt_num(512.0, 1), "512");
        assert_eq!(fmt_num(0.230, 3), "0.23");
        assert_eq!(fmt_num(100.0, 2), "100");
        assert_eq!(fmt_num(7722.5848, 2), "7722.58");
        assert_eq!(fmt_num(94.8, 0), "95");
    }

    #[test]
    fn negatives_tie_toward_positive_infinity() {
        assert_eq!(fmt_num(-1.0, 2), "-1");
        assert_eq!(fmt_num(-0.5, 0), "0");
        assert_eq!(fmt_num(-12.5, 0), "-12");
        assert_eq!(fmt_num(-12.51, 0), "-13");
        assert_eq!(fmt_num(-0.125, 2), "-0.12");
    }

    #[test]
    fn exponent_reprs_and_non_finite() {
        assert_eq!(fmt_num(1e-05, 4), "0");
        assert_eq!(fmt_num(5e-05, 4), "0.0001");
        assert_eq!(fmt_num(1.5e16, 2), "15000000000000000");
        assert_eq!(fmt_num(f64::NAN, 2), "—");
        assert_eq!(fmt_num(f64::INFINITY, 2), "—");
    }

    #[test]
    fn units_and_keys() {
        assert_eq!(unit_for_key("TTFT (ms)"), Unit::Millis);
        assert_eq!(unit_for_key("Decode (tok/s)"), Unit::TokPerSec);
        assert_eq!(unit_for_key("Input tokens"), Unit::Count);
        assert_eq!(unit_for_key("Avg Input Tokens"), Unit::AvgTokens);
        assert_eq!(unit_for_key("Something new"), Unit::Raw);
        assert_eq!(Unit::TokPerSec.fmt_with_unit(96.297), "96.3 tok/s");
        assert_eq!(Unit::Duration.fmt_with_unit(26.5812), "26.58 s");
        assert_eq!(Unit::Percent.fmt_with_unit(100.0), "100%");
        assert_eq!(Unit::Percent.fmt_with_unit(f64::NAN), "—");
    }

    #[test]
    fn python_comma_formats() {
        assert_eq!(py_comma(2560.0), "2,560.0");
        assert_eq!(py_comma(144.0), "144.0");
        assert_eq!(py_comma(1234567.25), "1,234,567.25");
        assert_eq!(py_comma(-1234.5), "-1,234.5");
        assert_eq!(py_comma(1e16), "1e+16");
        assert_eq!(py_comma_fixed(1896.0, 0), "1,896");
        assert_eq!(py_comma_fixed(999.5, 0), "1,000");
        assert_eq!(py_comma_fixed(0.5, 0), "0");
    }
}
