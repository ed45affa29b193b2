//! A parser for the Prometheus text exposition format (version 0.0.4, as vLLM, SGLang, llama.cpp, TGI and
//! the DCGM exporter serve it), written here rather than taken from a crate: `prometheus-parse` (last
//! release 2023) reads metric names with `\w+`, so it drops vLLM's `vllm:` names, and splits label values on
//! commas; `openmetrics-parser` is LGPL-3.0; the others are single unmaintained 0.1 releases. The format is
//! small and line-based.
//!
//! Accepted: `# HELP` / `# TYPE` lines, other comments, blank lines, an OpenMetrics `# EOF`, and samples
//! `name{label="value",…} value [timestamp]` with `\\`, `\"`, `\n` escapes, a trailing comma in the label
//! set, and Go float spellings (`NaN`, `+Inf`, `-Inf`). Any other line makes the whole text invalid: a
//! scrape that returns something else (an HTML page, JSON) is reported, never half-read.
//!
//! Samples are grouped into families: a `# TYPE` declares one, and a histogram's `_bucket`, `_sum` and
//! `_count` samples (a summary's `_sum` and `_count`) belong to it; a sample with no declared family forms
//! an untyped one under its own name.

use std::collections::HashMap;

/// A family's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic total.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Cumulative `_bucket{le=…}` counts with `_sum` and `_count`.
    Histogram,
    /// Client-side quantiles with `_sum` and `_count`.
    Summary,
    /// No `# TYPE` line, or `untyped` / `unknown`.
    Untyped,
}

impl Kind {
    fn parse(s: &str) -> Kind {
        match s {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "histogram" | "gaugehistogram" => Kind::Histogram,
            "summary" => Kind::Summary,
            _ => Kind::Untyped,
        }
    }

    /// The lowercase name, as in a `# TYPE` line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Untyped => "untyped",
        }
    }
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's own name (e.g. `vllm:e2e_request_latency_seconds_bucket`).
    pub name: String,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One metric family: its name, type and samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The family name (without `_bucket` / `_sum` / `_count` for histograms and summaries).
    pub name: String,
    /// The declared type.
    pub kind: Kind,
    /// The samples, in text order.
    pub samples: Vec<Sample>,
}

/// A parsed exposition: its families in order of first appearance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// The families.
    pub families: Vec<Family>,
}

impl Exposition {
    /// The family called `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }
}

/// Why a text is not a valid exposition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not Prometheus text format (line {line}: {reason})")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

/// Parses `text`; at least one sample is required.
pub fn parse(text: &str) -> Result<Exposition, ParseError> {
    let mut out = Exposition::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let fail = |reason: &str| ParseError {
            line: i + 1,
            reason: reason.to_string(),
        };
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if let (Some("TYPE"), Some(name), Some(kind)) =
                (words.next(), words.next(), words.next())
            {
                if !valid_name(name) {
                    return Err(fail("invalid metric name in # TYPE"));
                }
                let kind = Kind::parse(kind);
                match index.get(name) {
                    Some(&f) => out.families[f].kind = kind,
                    None => {
                        index.insert(name.to_string(), out.families.len());
                        out.families.push(Family {
                            name: name.to_string(),
                            kind,
                            samples: Vec::new(),
                        });
                    }
                }
            }
            continue;
        }
        let sample = sample(line).map_err(fail)?;
        let f = match family_of(&sample.name, &index, &out.families) {
            Some(f) => f,
            None => {
                index.insert(sample.name.clone(), out.families.len());
                out.families.push(Family {
                    name: sample.name.clone(),
                    kind: Kind::Untyped,
                    samples: Vec::new(),
                });
                out.families.len() - 1
            }
        };
        out.families[f].samples.push(sample);
    }
    if out.families.iter().all(|f| f.samples.is_empty()) {
        return Err(ParseError {
            line: 0,
            reason: "no samples".into(),
        });
    }
    out.families.retain(|f| !f.samples.is_empty());
    Ok(out)
}

/// The family a sample named `name` belongs to.
fn family_of(name: &str, index: &HashMap<String, usize>, families: &[Family]) -> Option<usize> {
    if let Some(&f) = index.get(name) {
        return Some(f);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if let Some(&f) = index.get(base) {
                let kind = families[f].kind;
                if kind == Kind::Histogram || (kind == Kind::Summary && suffix != "_bucket") {
                    return Some(f);
                }
            }
        }
    }
    None
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// One sample line (already trimmed, not a comment).
fn sample(line: &str) -> Result<Sample, &'static str> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_ascii_whitespace())
        .ok_or("a sample needs a value")?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err("invalid metric name");
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = label_set(after, &mut labels)?;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or("a sample needs a value")?;
    let value = float(value).ok_or("the value is not a number")?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| "the timestamp is not an integer")?;
    }
    if fields.next().is_some() {
        return Err("unexpected text after the value");
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Reads `k="v",…}` into `labels`; returns the text after the closing brace.
fn label_set<'a>(
    mut s: &'a str,
    labels: &mut Vec<(String, String)>,
) -> Result<&'a str, &'static str> {
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Ok(after);
        }
        let eq = s.find('=').ok_or("a label needs a value")?;
        let key = s[..eq].trim();
        if !valid_name(key) || key.contains(':') {
            return Err("invalid label name");
        }
        s = s[eq + 1..].trim_start();
        s = s.strip_prefix('"').ok_or("a label value must be quoted")?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("unterminated label value"),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                    _ => return Err("invalid escape in a label value"),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = s[end + 1..].trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return Err("expected ',' or '}' after a label");
        }
    }
}

/// A Go-style float: `NaN`, `+Inf`, `-Inf`, or a decimal.
pub(crate) fn float(s: &str) -> Option<f64> {
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen, \"big\""} 3.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="q"} 1234.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.04",model_name="q"} 2.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="q",} 5.0
vllm:time_to_first_token_seconds_sum{model_name="q"} 0.9
vllm:time_to_first_token_seconds_count{model_name="q"} 5.0
process_start_time_seconds 1.7e9 1700000000000
"#;

    #[test]
    fn reads_vllm_text_with_colons_commas_and_escapes() {
        let e = parse(VLLM).unwrap();
        let names: Vec<&str> = e.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "vllm:num_requests_running",
                "vllm:prompt_tokens_total",
                "vllm:time_to_first_token_seconds",
                "process_start_time_seconds"
            ]
        );
        let running = &e.families[0];
        assert_eq!(running.kind, Kind::Gauge);
        assert_eq!(
            running.samples[0].label("model_name"),
            Some("qwen, \"big\"")
        );
        assert_eq!(running.samples[0].value, 3.0);
        let ttft = e.family("vllm:time_to_first_token_seconds").unwrap();
        assert_eq!(ttft.kind, Kind::Histogram);
        assert_eq!(ttft.samples.len(), 4);
        assert_eq!(ttft.samples[1].label("le"), Some("+Inf"));
        assert_eq!(e.families[3].kind, Kind::Untyped);
        assert_eq!(e.families[3].samples[0].value, 1.7e9);
    }

    #[test]
    fn garbage_is_rejected_whole() {
        for text in [
            "<html><body>nope</body></html>",
            "{\"vllm:num_requests_running\": 3}",
            "m{a=\"1\" 3",
            "m 3 x",
            "m{a=1} 3",
            "",
            "# only comments\n",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
        let err = parse("ok 1\n<p>\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn go_floats() {
        assert!(float("NaN").unwrap().is_nan());
        assert_eq!(float("+Inf"), Some(f64::INFINITY));
        assert_eq!(float("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(float("1e-3"), Some(0.001));
        assert_eq!(float("0x10"), None);
    }
}
