//! The plan of an SLA auto-tune (`--sla-auto-tune`, `--sla-*`, llmperf's `--sla-confidence`):
//! [`SlaPlan::from_cli`] checks every `--sla-*` flag before anything is created; its errors name the
//! flag (usage errors, exit 2). [`criterion`] holds the metrics and conditions of `--sla-params`. The
//! search itself is [`crate::sla`].

pub mod criterion;
mod criterion_error;

use serde_json::Value;

use crate::cli::sla::SlaArgs;
use crate::error::UsageError;
use criterion::Criterion;

/// One criterion group: `(metric name, criterion)` in the order written (AND within the group).
pub type Group = Vec<(String, Criterion)>;

/// The variable searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variable {
    /// Concurrency (closed loop).
    Parallel,
    /// Request rate, req/s.
    Rate,
}

impl Variable {
    /// `parallel` or `rate`.
    pub fn name(self) -> &'static str {
        match self {
            Variable::Parallel => "parallel",
            Variable::Rate => "rate",
        }
    }
}

/// The validated `--sla-*` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaPlan {
    /// `--sla-variable`.
    pub variable: Variable,
    /// `--sla-params`, parsed.
    pub groups: Vec<Group>,
    /// `--sla-params` as Python prints the parsed list (`[{'p99_ttft': '<=500'}]`), for the log.
    pub params_repr: String,
    /// `--sla-params` as JSON (for the run's arguments file).
    pub params_json: Value,
    /// `--sla-num-runs`.
    pub num_runs: usize,
    /// `--sla-lower-bound`.
    pub lower: i64,
    /// `--sla-upper-bound`.
    pub upper: i64,
    /// `--sla-fixed-parallel` (rate mode's concurrency; default the upper bound).
    pub fixed_parallel: i64,
    /// `--sla-number-multiplier` (default 2).
    pub number_multiplier: f64,
    /// `--sla-fixed-parallel` as given (for the run's arguments file).
    pub fixed_parallel_given: Option<i64>,
    /// `--sla-number-multiplier` as given (for the run's arguments file).
    pub multiplier_given: Option<f64>,
    /// `--parallel` / `--rate`'s first value: where the search starts.
    pub current: f64,
    /// `--sleep-interval`, seconds (logged between the runs of one value).
    pub sleep_interval_s: u64,
    /// `--sla-confidence`.
    pub confidence: Option<f64>,
    /// `--sla-max-runs`.
    pub max_runs: usize,
}

fn err<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Python's `repr` of a JSON value (`{'a': 'b'}`, `True`, `None`).
pub(crate) fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => crate::pyjson::float_repr(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => py_str_repr(s),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", py_str_repr(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Parses `--sla-params` (evalscope: a JSON list of non-empty objects of known metrics).
fn parse_params(text: &str, input_only: bool) -> Result<(Vec<Group>, Value), UsageError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        UsageError(format!(
            "--sla-params is not valid JSON ({e}); expected e.g. '[{{\"p99_ttft\": \"<=500ms\"}}]'"
        ))
    })?;
    let Value::Array(items) = &value else {
        return err("--sla-params must be a JSON list of criterion groups, e.g. '[{\"p99_ttft\": \"<=500ms\"}]' (a bare object is not accepted, as in evalscope)");
    };
    if items.is_empty() {
        return err("--sla-params requires at least one non-empty criterion group");
    }
    let mut groups = Vec::new();
    for item in items {
        let Value::Object(m) = item else {
            return err(format!(
                "--sla-params: every group must be a JSON object of metric: condition, got {item}"
            ));
        };
        if m.is_empty() {
            return err("--sla-params must contain only non-empty criterion groups");
        }
        let mut group = Group::new();
        for (name, cond) in m {
            let Some(def) = criterion::metric(name) else {
                let mut names: Vec<&str> = criterion::METRICS.iter().map(|m| m.name).collect();
                names.sort_unstable();
                return err(format!(
                    "--sla-params: unknown SLA metric '{name}'; supported: {}",
                    names.join(", ")
                ));
            };
            if input_only && !criterion::INPUT_ONLY_METRICS.contains(&name.as_str()) {
                return err(format!(
                    "--sla-params: metric {name} is unavailable for embedding/rerank APIs (use avg_latency, p99_latency or rps)"
                ));
            }
            let text = match cond {
                Value::String(s) => s.clone(),
                other => py_repr(other),
            };
            let c = criterion::parse(&text, def.field)
                .map_err(|e| UsageError(format!("--sla-params: {name}: {e}")))?;
            group.push((name.clone(), c));
        }
        groups.push(group);
    }
    let objectives = groups
        .iter()
        .flatten()
        .filter(|(_, c)| c.is_objective())
        .count();
    if objectives > 0 && (groups.len() != 1 || groups[0].len() != 1) {
        return err("--sla-params: max/min requires exactly one SLA group containing one metric");
    }
    Ok((groups, value))
}

impl SlaPlan {
    /// Checks the `--sla-*` flags; `None` without `--sla-auto-tune`. `current` is the first `--parallel`
    /// or `--rate` value (per `--sla-variable`).
    pub fn from_cli(
        a: &SlaArgs,
        parallel: &[i64],
        rate: &[f64],
        sleep_interval_s: u64,
        input_only: bool,
    ) -> Result<Option<SlaPlan>, UsageError> {
        if a.sla_max_runs.is_some() && a.sla_confidence.is_none() {
            return err("--sla-max-runs needs --sla-confidence");
        }
        if !a.sla_auto_tune {
            if a.sla_confidence.is_some() {
                return err("--sla-confidence needs --sla-auto-tune");
            }
            return Ok(None);
        }
        let variable = match a.sla_variable.as_str() {
            "parallel" => Variable::Parallel,
            "rate" => Variable::Rate,
            other => return err(format!("--sla-variable {other:?} must be parallel or rate")),
        };
        let Some(text) = &a.sla_params else {
            return err("--sla-auto-tune needs --sla-params, e.g. --sla-params '[{\"p99_ttft\": \"<=500ms\"}]'");
        };
        let (groups, params_json) = parse_params(text, input_only)?;
        if a.sla_num_runs < 1 {
            return err(format!("--sla-num-runs {} must be >= 1", a.sla_num_runs));
        }
        if a.sla_lower_bound < 1 || a.sla_upper_bound < a.sla_lower_bound {
            return err(format!(
                "--sla-lower-bound {} and --sla-upper-bound {} must satisfy 1 <= lower <= upper",
                a.sla_lower_bound, a.sla_upper_bound
            ));
        }
        if let Some(p) = a.sla_fixed_parallel.filter(|p| *p < 1) {
            return err(format!("--sla-fixed-parallel {p} must be >= 1"));
        }
        if let Some(m) = a
            .sla_number_multiplier
            .filter(|m| !m.is_finite() || *m <= 0.0)
        {
            return err(format!(
                "--sla-number-multiplier {m} must be finite and > 0"
            ));
        }
        if let Some(c) = a.sla_confidence.filter(|c| !(*c > 0.0 && *c < 1.0)) {
            return err(format!(
                "--sla-confidence {c} must be a level between 0 and 1, e.g. 0.95"
            ));
        }
        if a.sla_confidence.is_some() && groups.iter().flatten().any(|(_, c)| c.is_objective()) {
            return err("--sla-confidence works with threshold conditions, not max/min");
        }
        let num_runs = a.sla_num_runs as usize;
        let max_runs = a.sla_max_runs.unwrap_or(10) as usize;
        if a.sla_confidence.is_some() && max_runs < num_runs.max(2) {
            return err(format!(
                "--sla-max-runs {max_runs} must be at least --sla-num-runs and at least 2"
            ));
        }
        let current = match variable {
            Variable::Parallel => parallel.first().map_or(1.0, |p| *p as f64),
            Variable::Rate => rate.first().copied().unwrap_or(-1.0),
        };
        Ok(Some(SlaPlan {
            variable,
            params_repr: py_repr(&params_json),
            params_json,
            groups,
            num_runs,
            lower: a.sla_lower_bound,
            upper: a.sla_upper_bound,
            fixed_parallel: a.sla_fixed_parallel.unwrap_or(a.sla_upper_bound),
            number_multiplier: a.sla_number_multiplier.unwrap_or(2.0),
            fixed_parallel_given: a.sla_fixed_parallel,
            multiplier_given: a.sla_number_multiplier,
            current,
            sleep_interval_s,
            confidence: a.sla_confidence,
            max_runs,
        }))
    }

    /// Where the search starts: the current value clamped into the range, truncated to an integer.
    pub fn start_value(&self) -> i64 {
        let v = self.current.min(self.upper as f64).max(self.lower as f64);
        v.trunc() as i64
    }

    /// Requests per run at `value`: `max(1, round(value × multiplier))` (Python's round: half to even).
    pub fn number_for(&self, value: i64) -> u64 {
        let x = value as f64 * self.number_multiplier;
        let r = x.round_ties_even();
        r.max(1.0) as u64
    }
}

#[cfg(test)]
mod tests;
