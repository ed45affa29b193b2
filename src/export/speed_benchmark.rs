//! The speed table of `--dataset speed_benchmark(_long)`: evalscope's query over the run's
//! database — per prompt length, the mean decode speed `completion_tokens / latency` and the mean GPU
//! memory, each rounded to 2 decimals by SQLite — written as a list of
//! `{"Prompt Tokens", "Speed(tokens/s)", "GPU Memory(GB)"}` objects (indent 4), and the console table
//! evalscope logs after it (`tabulate(rows, headers='keys', tablefmt='simple_grid')`).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

const QUERY: &str = "SELECT prompt_tokens, ROUND(AVG(completion_tokens / latency), 2), \
     ROUND(AVG(max_gpu_memory_cost), 2) FROM result WHERE success = 1 AND latency > 0 \
     GROUP BY prompt_tokens";

/// The rows of the speed table, from the run's database.
pub fn speed_rows(db: &Path) -> Result<Vec<Map<String, Value>>> {
    let conn =
        rusqlite::Connection::open(db).with_context(|| format!("opening {}", db.display()))?;
    let mut stmt = conn.prepare(QUERY)?;
    let rows = stmt
        .query_map([], |r| {
            let mut m = Map::new();
            m.insert("Prompt Tokens".into(), json!(r.get::<_, Option<i64>>(0)?));
            m.insert("Speed(tokens/s)".into(), json!(r.get::<_, Option<f64>>(1)?));
            m.insert("GPU Memory(GB)".into(), json!(r.get::<_, Option<f64>>(2)?));
            Ok(m)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Python's `format(v, 'g')`: 6 significant digits, trailing zeros dropped, exponent form below 1e-4 and
/// from 1e6 on.
pub fn py_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    let strip = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        strip(&format!("{v:.*}", (5 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    }
}

/// A cell as tabulate shows it: `None` empty, integers as they are, floats in `g` format.
fn cell(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Number(n) => n.as_f64().map(py_g),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// tabulate's `simple_grid` table of `rows` (headers = the keys of the first row), as evalscope prints the
/// speed benchmark: numeric columns right-aligned with their decimal points lined up, a column with no
/// value left-aligned, at least 2 spaces more than its header, a rule between every two rows. Empty
/// without rows.
pub fn table(rows: &[Map<String, Value>]) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let headers: Vec<&String> = first.keys().collect();
    let mut columns: Vec<(usize, Vec<String>, bool)> = Vec::new();
    for h in &headers {
        let values: Vec<Option<String>> = rows.iter().map(|r| r.get(*h).and_then(cell)).collect();
        let numeric = rows.iter().filter_map(|r| r.get(*h)).any(|v| v.is_number());
        // Decimal alignment: pad each number on the right to the longest fraction (dot included).
        let fraction = |s: &str| s.find('.').map_or(0, |i| s.len() - i);
        let widest_fraction = values
            .iter()
            .flatten()
            .map(|s| fraction(s))
            .max()
            .unwrap_or(0);
        let shown: Vec<String> = values
            .into_iter()
            .map(|v| match v {
                Some(s) if numeric => {
                    let pad = widest_fraction - fraction(&s);
                    format!("{s}{}", " ".repeat(pad))
                }
                Some(s) => s,
                None => String::new(),
            })
            .collect();
        let width = shown
            .iter()
            .map(|s| crate::text::table::display_width(s))
            .fold(crate::text::table::display_width(h) + 2, usize::max);
        columns.push((width, shown, numeric));
    }
    let rule = |l: &str, m: &str, r: &str| {
        let parts: Vec<String> = columns.iter().map(|(w, _, _)| "─".repeat(w + 2)).collect();
        format!("{l}{}{r}", parts.join(m))
    };
    let align = |numeric: bool| {
        if numeric {
            crate::text::table::Align::Right
        } else {
            crate::text::table::Align::Left
        }
    };
    let line = |cells: Vec<(&str, usize, bool)>| {
        let parts: Vec<String> = cells
            .into_iter()
            .map(|(c, w, numeric)| crate::text::table::pad(c, w, align(numeric)))
            .collect();
        format!("│ {} │", parts.join(" │ "))
    };
    let mut out = vec![rule("┌", "┬", "┐")];
    out.push(line(
        headers
            .iter()
            .zip(&columns)
            .map(|(h, (w, _, n))| (h.as_str(), *w, *n))
            .collect(),
    ));
    for i in 0..rows.len() {
        out.push(rule("├", "┼", "┤"));
        out.push(line(
            columns
                .iter()
                .map(|(w, cells, n)| (cells[i].as_str(), *w, *n))
                .collect(),
        ));
    }
    out.push(rule("└", "┴", "┘"));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[(Option<i64>, Option<f64>, Option<f64>)]) -> Vec<Map<String, Value>> {
        data.iter()
            .map(|(p, s, g)| {
                let mut m = Map::new();
                m.insert("Prompt Tokens".into(), json!(p));
                m.insert("Speed(tokens/s)".into(), json!(s));
                m.insert("GPU Memory(GB)".into(), json!(g));
                m
            })
            .collect()
    }

    #[test]
    fn g_format_matches_python() {
        for (v, s) in [
            (50.69, "50.69"),
            (0.0, "0"),
            (48.0, "48"),
            (100.123, "100.123"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (999999.5, "1e+06"),
            (123456.4, "123456"),
        ] {
            assert_eq!(py_g(v), s, "{v}");
        }
    }

    /// Expected tables printed by tabulate 0.10 (evalscope's dependency) for the same rows.
    #[test]
    fn simple_grid_matches_tabulate() {
        let t = table(&rows(&[
            (Some(1), Some(50.69), Some(0.0)),
            (Some(6144), Some(51.04), Some(0.0)),
            (Some(14336), Some(7.5), Some(0.0)),
            (Some(30720), Some(100.123), Some(1.25)),
        ]));
        assert_eq!(
            t,
            "┌─────────────────┬───────────────────┬──────────────────┐\n│   Prompt Tokens │   Speed(tokens/s) │   GPU Memory(GB) │\n├─────────────────┼───────────────────┼──────────────────┤\n│               1 │            50.69  │             0    │\n├─────────────────┼───────────────────┼──────────────────┤\n│            6144 │            51.04  │             0    │\n├─────────────────┼───────────────────┼──────────────────┤\n│           14336 │             7.5   │             0    │\n├─────────────────┼───────────────────┼──────────────────┤\n│           30720 │           100.123 │             1.25 │\n└─────────────────┴───────────────────┴──────────────────┘"
        );
        let t = table(&rows(&[(Some(1), None, None)]));
        assert_eq!(
            t,
            "┌─────────────────┬───────────────────┬──────────────────┐\n│   Prompt Tokens │ Speed(tokens/s)   │ GPU Memory(GB)   │\n├─────────────────┼───────────────────┼──────────────────┤\n│               1 │                   │                  │\n└─────────────────┴───────────────────┴──────────────────┘"
        );
        assert_eq!(table(&[]), "");
    }
}
