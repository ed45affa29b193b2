//! One probed value of the SLA search: its runs' results, averaged exactly as evalscope 1.14.1's
//! `average_results` and `SLAAutoTuner._get_probe` average them (every numeric summary key as a float
//! mean, the request counts as integer sums, the percentile columns element-wise), the request gate
//! (every request of every run succeeded), and the SLA metric values (the mean of each run's value).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::metrics::{PercentileTable, PERCENTILE_LABELS};
use crate::plan::sla::criterion::{metric, Criterion, MetricDef};

/// The count keys that are summed rather than averaged.
const COUNT_KEYS: [&str; 5] = [
    "Total Requests",
    "Success Requests",
    "Failed Requests",
    "Stream Requests",
    "Non-Stream Requests",
];

/// One run of a probe, as the search needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// the run's summary file as an ordered map (evalscope's keys first, then llmperf's extras).
    pub summary: Map<String, Value>,
    /// The run's percentile table.
    pub percentiles: PercentileTable,
}

impl RunOutcome {
    /// From a run's summary file text and its percentile table.
    pub fn from_summary_json(summary_json: &str, percentiles: PercentileTable) -> Self {
        let summary = serde_json::from_str::<Map<String, Value>>(summary_json).unwrap_or_default();
        RunOutcome {
            summary,
            percentiles,
        }
    }

    /// `(total, succeeded)`, or `(0, 0)` when they are not sane whole numbers (evalscope's
    /// `_request_counts`).
    fn request_counts(&self) -> (u64, u64) {
        let get = |k: &str| self.summary.get(k).and_then(Value::as_u64);
        match (get("Total Requests"), get("Success Requests")) {
            (Some(total), Some(ok)) if total > 0 && ok <= total => (total, ok),
            _ => (0, 0),
        }
    }

    /// The value of SLA metric `m` in this run, when present and finite.
    pub fn metric_value(&self, m: &MetricDef) -> Option<f64> {
        let v = match m.percentile {
            None => self
                .summary
                .get(m.field)
                .filter(|v| !v.is_boolean())
                .and_then(Value::as_f64),
            Some(label) => {
                let row = PERCENTILE_LABELS.iter().position(|l| *l == label)?;
                self.percentiles.column(m.field).map(|c| c[row])
            }
        };
        v.filter(|x| x.is_finite())
    }
}

/// A probed value with the evidence for its decision (evalscope's `SLAProbe`).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The value of the search variable.
    pub value: i64,
    /// Every run, in order.
    pub runs: Vec<RunOutcome>,
    /// Requests over every run.
    pub total_requests: u64,
    /// Successful requests over every run.
    pub succeeded_requests: u64,
    /// It has runs, every run had requests, and all of them succeeded.
    pub request_gate_passed: bool,
    /// Why the probe is not valid (failed requests, missing metrics), per run.
    pub reasons: Vec<String>,
    /// Each SLA metric's mean over the runs (only metrics every run has), by metric name.
    pub metric_values: Vec<(String, f64)>,
    /// Per criterion group (1-based in the report): whether this probe meets it.
    pub group_passes: Vec<bool>,
}

impl Probe {
    /// Builds the probe of `value` from its runs; `metric_names` are the metrics the SLA names.
    pub fn new(value: i64, runs: Vec<RunOutcome>, metric_names: &BTreeSet<String>) -> Self {
        let mut probe = Probe {
            value,
            runs: Vec::new(),
            total_requests: 0,
            succeeded_requests: 0,
            request_gate_passed: false,
            reasons: Vec::new(),
            metric_values: Vec::new(),
            group_passes: Vec::new(),
        };
        for run in runs {
            probe.add_run(run, metric_names);
        }
        probe
    }

    /// Adds one more run (the confidence search repeats a value).
    pub fn add_run(&mut self, run: RunOutcome, metric_names: &BTreeSet<String>) {
        let i = self.runs.len() + 1;
        if self.runs.is_empty() {
            self.request_gate_passed = true;
        }
        let (total, ok) = run.request_counts();
        self.total_requests += total;
        self.succeeded_requests += ok;
        if total == 0 || ok != total {
            self.request_gate_passed = false;
            self.reasons
                .push(format!("run {i}: {ok}/{total} requests succeeded"));
        }
        for name in metric_names {
            let present = metric(name).and_then(|m| run.metric_value(&m)).is_some();
            if !present {
                self.reasons
                    .push(format!("run {i}: missing or non-finite {name}"));
            }
        }
        self.runs.push(run);
        self.metric_values = metric_names
            .iter()
            .filter_map(|name| {
                let m = metric(name)?;
                let values: Option<Vec<f64>> =
                    self.runs.iter().map(|r| r.metric_value(&m)).collect();
                let values = values?;
                Some((
                    name.clone(),
                    values.iter().sum::<f64>() / values.len() as f64,
                ))
            })
            .collect();
    }

    /// The metric's mean over the runs.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metric_values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// Each run's value of `name` (runs without it left out).
    pub fn run_values(&self, name: &str) -> Vec<f64> {
        match metric(name) {
            Some(m) => self
                .runs
                .iter()
                .filter_map(|r| r.metric_value(&m))
                .collect(),
            None => Vec::new(),
        }
    }

    /// No run failed a request and every run has every SLA metric.
    pub fn valid(&self) -> bool {
        self.reasons.is_empty()
    }

    /// Whether the probe meets every criterion of `group` (evalscope's `_group_passes`).
    pub fn passes(&self, group: &[(String, Criterion)]) -> bool {
        self.request_gate_passed
            && group
                .iter()
                .all(|(name, c)| self.metric(name).is_some_and(|v| c.validate(v)))
    }

    /// The averaged result: `{"metrics": …, "percentiles": …}` as evalscope writes it per probe.
    pub fn averaged(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("metrics".into(), Value::Object(self.averaged_metrics()));
        out.insert(
            "percentiles".into(),
            Value::Object(self.averaged_percentiles()),
        );
        out
    }

    fn averaged_metrics(&self) -> Map<String, Value> {
        let mut avg = Map::new();
        let Some(first) = self.runs.first() else {
            return avg;
        };
        for key in first.summary.keys() {
            let values: Vec<f64> = self
                .runs
                .iter()
                .filter_map(|r| r.summary.get(key))
                .filter(|v| v.is_number())
                .filter_map(Value::as_f64)
                .collect();
            if !values.is_empty() {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                avg.insert(key.clone(), float(mean));
            }
        }
        for key in COUNT_KEYS {
            let sum: u64 = self
                .runs
                .iter()
                .filter_map(|r| r.summary.get(key).and_then(Value::as_u64))
                .sum();
            avg.insert(key.to_string(), Value::from(sum));
        }
        avg.insert("Total Requests".into(), self.total_requests.into());
        avg.insert("Success Requests".into(), self.succeeded_requests.into());
        avg.insert(
            "Failed Requests".into(),
            (self.total_requests - self.succeeded_requests).into(),
        );
        avg
    }

    fn averaged_percentiles(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let Some(first) = self.runs.first() else {
            return out;
        };
        if first.percentiles.columns.is_empty() {
            return out;
        }
        out.insert(
            "Percentiles".into(),
            Value::from(PERCENTILE_LABELS.to_vec()),
        );
        for (key, _) in &first.percentiles.columns {
            let column: Vec<Value> = (0..PERCENTILE_LABELS.len())
                .map(|i| {
                    let vals: Vec<f64> = self
                        .runs
                        .iter()
                        .filter_map(|r| r.percentiles.column(key).map(|c| c[i]))
                        .collect();
                    if vals.is_empty() {
                        Value::from(0)
                    } else {
                        float(vals.iter().sum::<f64>() / vals.len() as f64)
                    }
                })
                .collect();
            out.insert(key.clone(), Value::Array(column));
        }
        out
    }
}

/// A float JSON value (NaN becomes `null`, which the writer prints as `NaN`).
fn float(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}
