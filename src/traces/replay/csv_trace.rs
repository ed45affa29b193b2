//! The CSV traces, found by their published header names (column order does not matter, other columns
//! are ignored):
//! * BurstGPT: `Timestamp` (seconds from the start of the trace), `Request tokens`, `Response tokens`
//!   (`Model`, `Total tokens`, `Log Type` unused). Rows with `Response tokens` 0 are the trace's failed
//!   requests and are skipped.
//! * Azure LLM inference: `TIMESTAMP` (a date-time with sub-second digits, or seconds), `ContextTokens`,
//!   `GeneratedTokens`.

use serde_json::Value;

use super::{Format, Parsed, ReplayRecord};
use crate::traces::error::TraceError;

/// The timestamp, input-length and output-length columns of `format`.
fn columns(format: Format) -> [&'static str; 3] {
    match format {
        Format::Azure => ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
        _ => ["Timestamp", "Request tokens", "Response tokens"],
    }
}

/// The fields of one CSV line (double-quoted fields may hold commas; `""` is a quote).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|f| f.trim().to_string()).collect()
}

fn count(name: &str, field: &str) -> Result<u64, TraceError> {
    field
        .parse::<f64>()
        .ok()
        .filter(|v| *v >= 0.0 && v.fract() == 0.0 && v.is_finite())
        .map(|v| v as u64)
        .ok_or_else(|| TraceError::BadRecord(format!("{name} {field:?} is not a token count")))
}

/// One data row; `Ok(None)` for a failed request (skipped).
fn row(
    format: Format,
    at: &[usize; 3],
    f: &[String],
    width: usize,
) -> Result<Option<Parsed>, TraceError> {
    if f.len() != width {
        return Err(TraceError::BadRecord(format!(
            "{} field(s), the header has {width}",
            f.len()
        )));
    }
    let [ts_col, in_col, out_col] = columns(format);
    let ts = &f[at[0]];
    let seconds = match format {
        Format::Azure => super::super::workload_trace::timestamp(&Value::String(ts.clone()))
            .map_err(|_| {
                TraceError::BadRecord(format!(
                    "{ts_col} {ts:?} is neither a date-time nor a number of seconds"
                ))
            })?,
        _ => ts
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite())
            .ok_or_else(|| {
                TraceError::BadRecord(format!("{ts_col} {ts:?} is not a number of seconds"))
            })?,
    };
    let input = count(in_col, &f[at[1]])?;
    let output = count(out_col, &f[at[2]])?;
    if format == Format::BurstGpt && output == 0 {
        return Ok(None);
    }
    if input == 0 {
        return Err(TraceError::BadRecord(format!(
            "{in_col} is 0: a request needs at least one prompt token"
        )));
    }
    let record = ReplayRecord {
        offset_s: 0.0,
        input_tokens: input,
        output_tokens: output,
        hash_ids: Vec::new(),
    };
    Ok(Some((seconds, record)))
}

/// The parsed rows (timestamps in seconds), the errors (`line N: …`) and the count of skipped failed rows.
pub(crate) fn parse(format: Format, text: &str) -> (Vec<Parsed>, Vec<String>, usize) {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let wanted = columns(format);
    let Some((header_no, header)) = lines.next() else {
        return (Vec::new(), Vec::new(), 0);
    };
    let names = fields(header.trim_start_matches('\u{feff}'));
    let mut at = [0; 3];
    let mut missing = Vec::new();
    for (slot, want) in at.iter_mut().zip(wanted) {
        match names.iter().position(|n| n == want) {
            Some(i) => *slot = i,
            None => missing.push(want),
        }
    }
    if !missing.is_empty() {
        let e = format!(
            "line {}: the header lacks the column(s) {} (a {} file has {})",
            header_no + 1,
            missing.join(", "),
            format.dataset(),
            wanted.join(", ")
        );
        return (Vec::new(), vec![e], 0);
    }
    let (mut out, mut errors, mut skipped) = (Vec::new(), Vec::new(), 0);
    for (n, line) in lines {
        match row(format, &at, &fields(line), names.len()) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => skipped += 1,
            Err(e) => errors.push(format!("line {}: {e}", n + 1)),
        }
    }
    (out, errors, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burstgpt_rows_by_header_name_and_failed_rows_skipped() {
        let text = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                    5,ChatGPT,472,18,490,Conversation log\n\
                    45,\"GPT-4, turbo\",1087,0,1087,API log\n\
                    7,ChatGPT,abc,18,490,Conversation log\n\
                    9,ChatGPT,12,18\n";
        let (ok, errors, skipped) = parse(Format::BurstGpt, text);
        assert_eq!(ok.len(), 1);
        assert_eq!(
            (ok[0].0, ok[0].1.input_tokens, ok[0].1.output_tokens),
            (5.0, 472, 18)
        );
        assert_eq!(skipped, 1);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("line 4: Request tokens \"abc\""),
            "{errors:?}"
        );
        assert!(errors[1].starts_with("line 5: 4 field(s)"), "{errors:?}");
    }

    #[test]
    fn azure_date_times_and_a_missing_column() {
        let text = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
                    2023-11-16 18:15:46.6805900,374,44\n\
                    2023-11-16 18:15:50.9951690,396,109\n";
        let (ok, errors, _) = parse(Format::Azure, text);
        assert!(errors.is_empty(), "{errors:?}");
        let gap = ok[1].0 - ok[0].0;
        assert!((gap - 4.314579).abs() < 1e-6, "{gap}");
        let (_, errors, _) = parse(Format::Azure, "TIMESTAMP,Context,GeneratedTokens\n1,2,3\n");
        assert!(errors[0].contains("ContextTokens"), "{errors:?}");
    }
}
