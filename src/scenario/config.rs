//! The `--scenario` value: `agentx`, or a JSON object with evalscope's AgentX keys, checked as evalscope
//! checks it (unknown keys, value types and ranges, `trace_limit` only in smoke mode). Every error names
//! the key.

use serde_json::{json, Map, Value};

use super::error::ScenarioError;

/// Traces replayed in smoke mode when `trace_limit` is not given (evalscope's `_SMOKE_TRACE_LIMIT`).
pub const SMOKE_TRACE_LIMIT: u64 = 4;

/// The keys an AgentX scenario object may have, in evalscope's order.
pub const KEYS: [&str; 13] = [
    "name",
    "variant",
    "mode",
    "max_context_length",
    "trace_limit",
    "num_gpus",
    "engine",
    "engine_version",
    "hardware",
    "tokenizer_trust_remote_code",
    "tokenizer_revision",
    "request_timeout_seconds",
    "benchmark_grace_period",
];

/// The data set variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `cc-traces-weka-062126-256k`: traces within a 256k context.
    K256,
    /// `cc-traces-weka-062126`: every trace.
    Full,
}

impl Variant {
    /// As evalscope spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::K256 => "256k",
            Variant::Full => "full",
        }
    }
}

/// A typed AgentX scenario (evalscope's `AgentXScenario`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentX {
    /// `variant`.
    pub variant: Variant,
    /// `mode == "smoke"` (else `benchmark`).
    pub smoke: bool,
    /// `max_context_length`: traces with a request over it are left out.
    pub max_context_length: Option<u64>,
    /// `trace_limit` (smoke mode only).
    pub trace_limit: Option<u64>,
    /// `num_gpus`: the per-GPU derived metrics.
    pub num_gpus: Option<u64>,
    /// `engine` (recorded).
    pub engine: Option<String>,
    /// `engine_version` (recorded).
    pub engine_version: Option<String>,
    /// `hardware` (recorded).
    pub hardware: Option<String>,
    /// `tokenizer_trust_remote_code` (recorded: llmperf reads `tokenizer.json` and runs no tokenizer code).
    pub tokenizer_trust_remote_code: bool,
    /// `request_timeout_seconds`: the total timeout of each request.
    pub request_timeout_seconds: Option<f64>,
    /// `benchmark_grace_period`: how long requests in flight at the end of the duration may finish.
    pub benchmark_grace_period: Option<f64>,
}

impl Default for AgentX {
    fn default() -> Self {
        AgentX {
            variant: Variant::K256,
            smoke: false,
            max_context_length: None,
            trace_limit: None,
            num_gpus: None,
            engine: None,
            engine_version: None,
            hardware: None,
            tokenizer_trust_remote_code: false,
            request_timeout_seconds: None,
            benchmark_grace_period: None,
        }
    }
}

fn err<T>(msg: impl std::fmt::Display) -> Result<T, ScenarioError> {
    Err(ScenarioError::Config(msg.to_string()))
}

fn positive_int(key: &str, v: &Value) -> Result<Option<u64>, ScenarioError> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_i64() {
            Some(i) if i > 0 => Ok(Some(i as u64)),
            Some(_) => err(format!("{key} must be greater than zero")),
            None => err(format!("{key} must be an integer, got {n}")),
        },
        other => err(format!("{key} must be an integer, got {other}")),
    }
}

fn opt_string(key: &str, v: &Value) -> Result<Option<String>, ScenarioError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => err(format!("{key} must be a string, got {other}")),
    }
}

fn opt_seconds(key: &str, v: &Value, zero_ok: bool) -> Result<Option<f64>, ScenarioError> {
    let x = match v {
        Value::Null => return Ok(None),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        other => return err(format!("{key} must be a number of seconds, got {other}")),
    };
    if !x.is_finite() || x < 0.0 || (x == 0.0 && !zero_ok) {
        let bound = if zero_ok { ">= 0" } else { "> 0" };
        return err(format!("{key} must be a finite number {bound}, got {x}"));
    }
    Ok(Some(x))
}

fn literal(key: &str, v: &Value, allowed: &[&str]) -> Result<String, ScenarioError> {
    match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(s.to_string()),
        _ => err(format!(
            "{key} must be one of {}, got {v}",
            allowed
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Parses `--scenario`: `agentx`, or a JSON object of AgentX keys.
pub fn parse(value: &str) -> Result<AgentX, ScenarioError> {
    if value == "agentx" {
        return Ok(AgentX::default());
    }
    let object: Map<String, Value> = match serde_json::from_str(value) {
        Ok(Value::Object(m)) => m,
        _ => return err("must be \"agentx\" or a valid AgentX JSON object"),
    };
    let mut s = AgentX::default();
    for (key, v) in &object {
        match key.as_str() {
            "name" => {
                literal(key, v, &["agentx"])?;
            }
            "variant" => {
                s.variant = match literal(key, v, &["256k", "full"])?.as_str() {
                    "full" => Variant::Full,
                    _ => Variant::K256,
                }
            }
            "mode" => s.smoke = literal(key, v, &["benchmark", "smoke"])? == "smoke",
            "max_context_length" => s.max_context_length = positive_int(key, v)?,
            "trace_limit" => s.trace_limit = positive_int(key, v)?,
            "num_gpus" => s.num_gpus = positive_int(key, v)?,
            "engine" => s.engine = opt_string(key, v)?,
            "engine_version" => s.engine_version = opt_string(key, v)?,
            "hardware" => s.hardware = opt_string(key, v)?,
            "tokenizer_revision" => {
                if !v.is_null() {
                    return err("tokenizer_revision: llmperf loads --tokenizer-path from a local folder or the hub's main revision; download that revision and point --tokenizer-path at its folder");
                }
            }
            "tokenizer_trust_remote_code" => match v {
                Value::Bool(b) => s.tokenizer_trust_remote_code = *b,
                other => return err(format!("{key} must be true or false, got {other}")),
            },
            "request_timeout_seconds" => s.request_timeout_seconds = opt_seconds(key, v, false)?,
            "benchmark_grace_period" => s.benchmark_grace_period = opt_seconds(key, v, true)?,
            other => {
                return err(format!(
                    "unknown key \"{other}\" (an AgentX scenario accepts: {})",
                    KEYS.join(", ")
                ))
            }
        }
    }
    if !s.smoke && s.trace_limit.is_some() {
        return err("trace_limit is only supported when mode is smoke");
    }
    Ok(s)
}

impl AgentX {
    /// Traces replayed: smoke mode's limit (4 unless `trace_limit`), else all.
    pub fn effective_trace_limit(&self) -> Option<u64> {
        self.smoke
            .then(|| self.trace_limit.unwrap_or(SMOKE_TRACE_LIMIT))
    }

    /// The scenario as evalscope's summary writes it (`model_dump(mode='json')`, every key in order).
    pub fn to_json(&self) -> Value {
        json!({
            "name": "agentx",
            "variant": self.variant.as_str(),
            "mode": if self.smoke { "smoke" } else { "benchmark" },
            "max_context_length": self.max_context_length,
            "trace_limit": self.trace_limit,
            "num_gpus": self.num_gpus,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "hardware": self.hardware,
            "tokenizer_trust_remote_code": self.tokenizer_trust_remote_code,
            "tokenizer_revision": Value::Null,
            "request_timeout_seconds": self.request_timeout_seconds,
            "benchmark_grace_period": self.benchmark_grace_period,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_and_objects() {
        assert_eq!(parse("agentx").unwrap(), AgentX::default());
        let s = parse(r#"{"name":"agentx","mode":"smoke","variant":"full","num_gpus":8}"#).unwrap();
        assert!(s.smoke);
        assert_eq!(s.variant, Variant::Full);
        assert_eq!(s.effective_trace_limit(), Some(4));
        assert_eq!(s.num_gpus, Some(8));
        let keys: Vec<String> = s.to_json().as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, KEYS);
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse(r#"{"name":"agentx","turbo":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key \"turbo\""), "{e}");
        let e = parse(r#"{"num_gpus":0}"#).unwrap_err().to_string();
        assert!(e.contains("num_gpus must be greater than zero"), "{e}");
        let e = parse(r#"{"trace_limit":2}"#).unwrap_err().to_string();
        assert!(
            e.contains("trace_limit is only supported when mode is smoke"),
            "{e}"
        );
        let e = parse(r#"{"variant":"512k"}"#).unwrap_err().to_string();
        assert!(e.contains("variant must be one of"), "{e}");
        assert!(parse("agentz").is_err());
        assert!(parse(r#"{"benchmark_grace_period":-1}"#).is_err());
    }
}
