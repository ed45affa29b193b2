//! `workload_trace` (evalscope's `plugin/datasets/workload_trace.py`): replay recorded requests at their
//! recorded arrival times.
//!
//! Each non-empty line of the JSONL file is an object with `body` (the request body, an object or a JSON
//! string of one), `timestamp` (seconds as a number or numeric string, or an ISO-8601 time; without a zone
//! it is UTC), and optionally `headers` (sent with that request only; flags' headers win), `request_id`
//! (stored in the `request_id` column) and `completion_tokens` (> 0). Unknown keys are errors. Every bad
//! line is reported, by number, before anything runs. Records are replayed in timestamp order at
//! `(timestamp − first timestamp) / speed` seconds after the run starts.
//!
//! `--dataset-args`: `speed` (> 0, default 1), `model_override` (every body's `model`), `model_mapping`
//! (`{"recorded": "sent"}`, before the override), `match_output_length` (`max_tokens` = the recorded
//! `completion_tokens` and `ignore_eos: true`, except for bodies that use constrained decoding —
//! `response_format` json_object / json_schema, or `tools` with a forced `tool_choice` — which keep only
//! `max_tokens`).

use std::path::Path;

use serde_json::{Map, Value};

use super::error::TraceError;

/// The body keys evalscope reserves for its per-request metadata.
const RESERVED: [&str; 4] = [
    "__evalscope_headers",
    "__evalscope_request_id",
    "__evalscope_arrival_offset",
    "__evalscope_is_warmup",
];

/// `--dataset-args` of `workload_trace`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceArgs {
    /// Replay speed: offsets are divided by it.
    pub speed: f64,
    /// Replaces every body's `model`.
    pub model_override: Option<String>,
    /// Maps recorded models to the ones sent.
    pub model_mapping: Map<String, Value>,
    /// `max_tokens` from `completion_tokens`, with `ignore_eos`.
    pub match_output_length: bool,
}

/// One request to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// The body to send (flags fill only the keys it lacks).
    pub body: Map<String, Value>,
    /// Seconds after the run's start.
    pub offset_s: f64,
    /// Headers for this request only.
    pub headers: Vec<(String, String)>,
    /// Stored in the `request_id` column.
    pub request_id: Option<String>,
    /// The prompt tokens the server should count, when known (synthesized prompts).
    pub intended_prompt_tokens: Option<u64>,
}

/// Parses `--dataset-args` for `workload_trace`; the error names the key.
pub fn parse_args(map: Option<&Map<String, Value>>) -> Result<TraceArgs, TraceError> {
    let mut args = TraceArgs {
        speed: 1.0,
        model_override: None,
        model_mapping: Map::new(),
        match_output_length: false,
    };
    for (key, value) in map.into_iter().flatten() {
        match key.as_str() {
            "speed" => match value.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => args.speed = s,
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args speed {value}: speed must be > 0"))),
            },
            "model_override" => match value {
                Value::String(s) => args.model_override = Some(s.clone()),
                Value::Null => {}
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args model_override {value}: must be a string"))),
            },
            "model_mapping" => match value {
                Value::Object(m) if m.values().all(Value::is_string) => args.model_mapping = m.clone(),
                Value::Null => {}
                _ => {
                    return Err(TraceError::DatasetArg(format!(
                        "--dataset-args model_mapping {value}: must be an object of model names, e.g. {{\"recorded\": \"served\"}}"
                    )))
                }
            },
            "match_output_length" => match value {
                Value::Bool(b) => args.match_output_length = *b,
                _ => return Err(TraceError::DatasetArg(format!("--dataset-args match_output_length {value}: must be true or false"))),
            },
            other => {
                return Err(TraceError::DatasetArg(format!(
                    "--dataset-args: unknown key {other:?} for workload_trace; known keys: speed, model_override, model_mapping, match_output_length"
                )))
            }
        }
    }
    Ok(args)
}

/// Seconds since the Unix epoch of an ISO-8601 time (zone-less times are UTC).
fn iso_seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let with_zone = if s.ends_with(['Z', 'z']) {
        format!("{}+00:00", &s[..s.len() - 1])
    } else {
        s.to_string()
    };
    let t = with_zone.replacen(' ', "T", 1);
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(&t) {
        return Some(dt.timestamp() as f64 + f64::from(dt.timestamp_subsec_nanos()) / 1e9);
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M%:z"] {
        if let Ok(dt) = chrono::DateTime::parse_from_str(&t, fmt) {
            return Some(dt.timestamp() as f64 + f64::from(dt.timestamp_subsec_nanos()) / 1e9);
        }
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(&t, fmt) {
            let utc = dt.and_utc();
            return Some(utc.timestamp() as f64 + f64::from(utc.timestamp_subsec_nanos()) / 1e9);
        }
    }
    let date = chrono::NaiveDate::parse_from_str(&t, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp() as f64)
}

pub(crate) fn timestamp(v: &Value) -> Result<f64, TraceError> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| TraceError::BadRecord(format!("timestamp {n} is not a number"))),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .or_else(|| iso_seconds(s))
            .ok_or_else(|| TraceError::BadRecord(format!("cannot parse timestamp: {s:?}"))),
        other => Err(TraceError::BadRecord(format!(
            "timestamp must be a number or ISO-8601 string, got {other}"
        ))),
    }
}

/// One record: `(timestamp, request before the arguments are applied, completion_tokens)`.
fn record(line: &str) -> Result<(f64, TraceRequest, Option<u64>), TraceError> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| TraceError::BadRecord(format!("invalid JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(TraceError::BadRecord(format!(
            "expected JSON object, got {v}"
        )));
    };
    if let Some(k) = obj.keys().find(|k| {
        !matches!(
            k.as_str(),
            "body" | "timestamp" | "headers" | "request_id" | "completion_tokens"
        )
    }) {
        return Err(TraceError::BadRecord(format!(
            "unknown key {k:?} (known: body, timestamp, headers, request_id, completion_tokens)"
        )));
    }
    let body = match obj.get("body") {
        Some(Value::Object(b)) => b.clone(),
        Some(Value::String(s)) => match serde_json::from_str(s) {
            Ok(Value::Object(b)) => b,
            Ok(_) => {
                return Err(TraceError::BadRecord(
                    "body JSON string must decode to an object".to_string(),
                ))
            }
            Err(e) => {
                return Err(TraceError::BadRecord(format!(
                    "body is a string but not valid JSON: {e}"
                )))
            }
        },
        Some(_) => {
            return Err(TraceError::BadRecord(
                "body must be an object or a JSON string of one".to_string(),
            ))
        }
        None => return Err(TraceError::BadRecord("missing \"body\"".to_string())),
    };
    if let Some(k) = RESERVED.iter().find(|k| body.contains_key(**k)) {
        return Err(TraceError::BadRecord(format!(
            "body contains reserved key {k:?}; remove it from the trace body"
        )));
    }
    crate::structured::check_body(&body).map_err(|e| TraceError::BadRecord(e.to_string()))?;
    let ts = timestamp(
        obj.get("timestamp")
            .ok_or_else(|| TraceError::BadRecord("missing \"timestamp\"".to_string()))?,
    )?;
    let headers = match obj.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(h)) => h
            .iter()
            .map(|(k, v)| {
                let Value::String(s) = v else {
                    return Err(TraceError::BadRecord(format!(
                        "headers[{k:?}] must be a string"
                    )));
                };
                if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
                    return Err(TraceError::BadRecord(format!(
                        "headers: {k:?} is not a valid HTTP header name"
                    )));
                }
                if reqwest::header::HeaderValue::from_str(s).is_err() {
                    return Err(TraceError::BadRecord(format!(
                        "headers[{k:?}]: not a valid HTTP header value"
                    )));
                }
                Ok((k.clone(), s.clone()))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(TraceError::BadRecord(
                "headers must be an object of strings".to_string(),
            ))
        }
    };
    let request_id = match obj.get("request_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(TraceError::BadRecord(format!(
                "request_id must be a string, got {other}"
            )))
        }
    };
    let completion_tokens = match obj.get("completion_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                return Err(TraceError::BadRecord(format!(
                    "completion_tokens must be > 0, got {v}"
                )))
            }
        },
    };
    let request = TraceRequest {
        body,
        offset_s: 0.0,
        headers,
        request_id,
        intended_prompt_tokens: None,
    };
    Ok((ts, request, completion_tokens))
}

/// Hop-by-hop headers (and the ones llmperf writes itself) a trace cannot set.
const NOT_FORWARDED: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
    "content-type",
];

/// A request's own header lines (`Name: value\r\n` each) for the client: the trace's headers, except the
/// hop-by-hop ones and those the flags already set (flags win, as evalscope merges them).
pub fn header_lines(headers: &[(String, String)], global: &[(String, String)]) -> Option<String> {
    let lines: String = headers
        .iter()
        .filter(|(k, _)| {
            !NOT_FORWARDED.iter().any(|h| k.eq_ignore_ascii_case(h))
                && !global.iter().any(|(g, _)| g.eq_ignore_ascii_case(k))
        })
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// Whether `body` uses constrained decoding (where `ignore_eos` is unsafe).
fn constrained(body: &Map<String, Value>) -> bool {
    let json_format = body
        .get("response_format")
        .and_then(|rf| rf.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t == "json_object" || t == "json_schema");
    let has_tools = body.get("tools").is_some_and(|t| {
        !(t.is_null() || t.as_array().is_some_and(Vec::is_empty) || t == &Value::Bool(false))
    });
    let forced = match body.get("tool_choice") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => s != "none" && s != "auto",
        Some(_) => true,
    };
    json_format || (has_tools && forced)
}

/// Reads and validates the trace at `path`; the requests in replay order, with their offsets. An error
/// lists every bad line.
pub fn load(path: &Path, args: &TraceArgs) -> Result<Vec<TraceRequest>, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|reason| TraceError::Unreadable {
        path: path.to_path_buf(),
        reason,
    })?;
    let mut errors = Vec::new();
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match record(line.trim()) {
            Ok(r) => records.push(r),
            Err(e) => errors.push(format!("line {}: {e}", n + 1)),
        }
    }
    if !errors.is_empty() {
        return Err(TraceError::Invalid {
            dataset: "workload_trace",
            path: path.to_path_buf(),
            lines: errors,
        });
    }
    if records.is_empty() {
        return Err(TraceError::Empty(format!(
            "workload_trace: dataset is empty ({})",
            path.display()
        )));
    }
    if records.windows(2).any(|w| w[1].0 < w[0].0) {
        tracing::warn!("workload_trace: timestamps not monotonic, sorting by timestamp");
        records.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let t0 = records[0].0;
    let mut skipped = 0;
    let out = records
        .into_iter()
        .map(|(ts, mut r, completion)| {
            r.offset_s = (ts - t0) / args.speed;
            let original = r
                .body
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string);
            let mapped = original.and_then(|m| args.model_mapping.get(&m).cloned());
            if let Some(m) = mapped {
                r.body.insert("model".into(), m);
            } else if let Some(o) = &args.model_override {
                r.body.insert("model".into(), Value::String(o.clone()));
            }
            if let (true, Some(n)) = (args.match_output_length, completion) {
                r.body.insert("max_tokens".into(), Value::from(n));
                if constrained(&r.body) {
                    skipped += 1;
                } else {
                    r.body.insert("ignore_eos".into(), Value::Bool(true));
                }
            }
            r
        })
        .collect();
    if skipped > 0 {
        tracing::warn!("workload_trace: {skipped} request(s) use constrained decoding (response_format / tools); ignore_eos skipped for these (max_tokens still set)");
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
