//! `--sla-params`: the metrics an SLA may name, and one criterion (`"<=500ms"`, `">= 10"`, `"max"`),
//! parsed exactly as evalscope 1.14.1's `sla_criterion.py` parses it: Unicode `≤ ≥ ≧` accepted, the
//! longest operator first, a bare number read in the metric's report unit, an `s`/`ms` suffix converted
//! into it, and the target rendered as evalscope renders it (`500 ms`).

use super::criterion_error::CriterionError;
use crate::pyjson::float_repr;
use crate::text::format::unit_for_key;

/// An SLA metric name and the summary key or percentile column that holds its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// The name used in `--sla-params` (`p99_ttft`).
    pub name: &'static str,
    /// The summary key or percentile column key (`TTFT (ms)`), the authority for its unit.
    pub field: &'static str,
    /// For a percentile metric: the percentile row label (`99%`).
    pub percentile: Option<&'static str>,
}

const fn summary(name: &'static str, field: &'static str) -> MetricDef {
    MetricDef {
        name,
        field,
        percentile: None,
    }
}

const fn pct(name: &'static str, label: &'static str, field: &'static str) -> MetricDef {
    MetricDef {
        name,
        field,
        percentile: Some(label),
    }
}

/// Every metric `--sla-params` may name, in evalscope's order (`SLA_METRIC_FIELDS`).
pub const METRICS: [MetricDef; 12] = [
    summary("avg_latency", "Avg Latency (s)"),
    summary("avg_ttft", "Avg TTFT (ms)"),
    summary("avg_tpot", "Avg TPOT (ms)"),
    summary("rps", "Req Throughput (req/s)"),
    summary("tps", "Output Throughput (tok/s)"),
    pct("p99_latency", "99%", "Latency (s)"),
    pct("p99_ttft", "99%", "TTFT (ms)"),
    pct("p90_ttft", "90%", "TTFT (ms)"),
    pct("p50_ttft", "50%", "TTFT (ms)"),
    pct("p99_tpot", "99%", "TPOT (ms)"),
    pct("p90_tpot", "90%", "TPOT (ms)"),
    pct("p50_tpot", "50%", "TPOT (ms)"),
];

/// The metrics an embedding or rerank run has.
pub const INPUT_ONLY_METRICS: [&str; 3] = ["avg_latency", "p99_latency", "rps"];

/// The definition of metric `name`.
pub fn metric(name: &str) -> Option<MetricDef> {
    METRICS.iter().copied().find(|m| m.name == name)
}

/// A comparison or an objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `max`: maximise the metric.
    Max,
    /// `min`: minimise the metric.
    Min,
}

/// One parsed criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// The operator.
    pub op: Op,
    /// The threshold in the metric's unit (0 for `max`/`min`).
    pub target: f64,
    /// The threshold as evalscope shows it (`500 ms`).
    pub display: String,
}

/// `format_sla_operand`: Python's `str(value)` without a trailing `.0`, then the metric's unit.
pub fn format_operand(value: f64, field: &str) -> String {
    let text = float_repr(value);
    let number = text.strip_suffix(".0").unwrap_or(&text);
    let unit = raw_unit(field);
    if unit.is_empty() {
        number.to_string()
    } else {
        format!("{number} {unit}")
    }
}

/// The unit evalscope's semantics give a field (`ms`, `s`, `req/s`, `tok/s`).
fn raw_unit(field: &str) -> &'static str {
    unit_for_key(field).suffix()
}

fn seconds_per(unit: &str) -> Option<f64> {
    match unit {
        "s" => Some(1.0),
        "ms" => Some(0.001),
        _ => None,
    }
}

/// Splits `<number><suffix>` as evalscope's `_THRESHOLD_RE` does.
fn split_threshold(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let bytes = t.as_bytes();
    let mut i = 0;
    if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - digits_start;
    let mut frac_digits = 0;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let f = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - f;
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        let e = j;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        if j > e {
            i = j;
        }
    }
    let number: f64 = t[..i].parse().ok()?;
    let rest = t[i..].trim_start();
    let suffix_ok = rest
        .chars()
        .all(|c| c.is_ascii_alphabetic() || c == '/' || c == '%');
    suffix_ok.then_some((number, rest))
}

/// Parses one criterion for metric field `field`; the error is evalscope's message.
pub fn parse(value: &str, field: &str) -> Result<Criterion, CriterionError> {
    let text: String = value
        .trim()
        .replace('≤', "<=")
        .replace(['≥', '≧'], ">=")
        .replace('\u{2009}', "");
    match text.as_str() {
        "max" => return Ok(criterion(Op::Max, 0.0, String::new())),
        "min" => return Ok(criterion(Op::Min, 0.0, String::new())),
        _ => {}
    }
    let (op, rest) = if let Some(r) = text.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = text.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = text.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = text.strip_prefix('>') {
        (Op::Gt, r)
    } else {
        return Err(CriterionError::Format(text));
    };
    let invalid = || CriterionError::Target(text.clone());
    let (mut number, suffix) = split_threshold(rest).ok_or_else(invalid)?;
    if !number.is_finite() {
        return Err(invalid());
    }
    let unit = raw_unit(field);
    if !suffix.is_empty() && suffix != unit {
        match (seconds_per(suffix), seconds_per(unit)) {
            (Some(from), Some(to)) => number *= from / to,
            _ => {
                return Err(CriterionError::Unit {
                    suffix: suffix.to_string(),
                    unit: unit.to_string(),
                    text: text.clone(),
                })
            }
        }
    }
    Ok(criterion(op, number, format_operand(number, field)))
}

fn criterion(op: Op, target: f64, display: String) -> Criterion {
    Criterion {
        op,
        target,
        display,
    }
}

impl Criterion {
    /// Whether `actual` meets it (`max`/`min` always do).
    pub fn validate(&self, actual: f64) -> bool {
        match self.op {
            Op::Le => actual <= self.target,
            Op::Lt => actual < self.target,
            Op::Ge => actual >= self.target,
            Op::Gt => actual > self.target,
            Op::Max | Op::Min => true,
        }
    }

    /// Whether this is an objective (`max`/`min`).
    pub fn is_objective(&self) -> bool {
        matches!(self.op, Op::Max | Op::Min)
    }

    /// Python's `str(criterion)`: `<= 500 ms`, `max`.
    pub fn text(&self) -> String {
        let op = match self.op {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Max => return "max".into(),
            Op::Min => return "min".into(),
        };
        let target = if self.display.is_empty() {
            crate::pyjson::float_repr(self.target)
        } else {
            self.display.clone()
        };
        format!("{op} {target}")
    }

    /// `format_cond("")`: `<= 500 ms`, `-> max`.
    pub fn cond(&self) -> String {
        match self.op {
            Op::Max => "-> max".into(),
            Op::Min => "-> min".into(),
            _ => self.text(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_use_the_report_unit_and_suffixes_convert() {
        let c = parse("<=500", "TTFT (ms)").unwrap();
        assert_eq!(
            (c.op, c.target, c.text()),
            (Op::Le, 500.0, "<= 500 ms".into())
        );
        let c = parse("<0.5s", "TTFT (ms)").unwrap();
        assert_eq!(
            (c.op, c.target, c.text()),
            (Op::Lt, 500.0, "< 500 ms".into())
        );
        let c = parse("≤ 250ms", "Latency (s)").unwrap();
        assert_eq!(
            (c.op, c.target, c.text()),
            (Op::Le, 0.25, "<= 0.25 s".into())
        );
        let c = parse("≥10", "Req Throughput (req/s)").unwrap();
        assert_eq!(c.text(), ">= 10 req/s");
        assert_eq!(
            parse(" max ", "Output Throughput (tok/s)").unwrap().op,
            Op::Max
        );
        assert!(parse("=5", "TTFT (ms)")
            .unwrap_err()
            .to_string()
            .contains("Invalid SLA param format"));
        assert!(parse("<=abc", "TTFT (ms)")
            .unwrap_err()
            .to_string()
            .contains("Invalid target value"));
        assert!(parse("<=5tok/s", "TTFT (ms)")
            .unwrap_err()
            .to_string()
            .contains("does not match"));
        assert!(parse("<=1e999", "TTFT (ms)").is_err());
    }

    #[test]
    fn validate_compares_as_written() {
        let c = parse("<500", "TTFT (ms)").unwrap();
        assert!(c.validate(499.9) && !c.validate(500.0));
        let c = parse(">=2", "Req Throughput (req/s)").unwrap();
        assert!(c.validate(2.0) && !c.validate(1.99));
    }
}
