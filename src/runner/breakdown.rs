//! The per-model (`--lora-modules`) and per-endpoint (`--url-strategy`) breakdowns of a run's headline
//! metrics, recounted from the run's stored rows once its database is complete, written beside the
//! summary (which stays evalscope's, flat) and logged as a table.
//!
//! Per group (in the order the flags list them, then any other value seen): requests, successes,
//! failures, their share of the run's requests, and over the successes the mean latency, TTFT and TPOT,
//! the mean input and output tokens, and the output throughput over the whole run's test duration (so the
//! groups' throughputs add up to the run's).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use crate::plan::RunPlan;
use crate::pyjson::round;
use crate::run_folder::RunDir;

/// What a breakdown groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum By {
    /// The body's `model`.
    Model,
    /// The endpoint a request was sent to (the `endpoint` column).
    Endpoint,
}

impl By {
    fn name(self) -> &'static str {
        match self {
            By::Model => "model",
            By::Endpoint => "endpoint",
        }
    }
}

/// One group's sums.
#[derive(Debug, Default, Clone)]
struct Group {
    requests: u64,
    successes: u64,
    latency_s: f64,
    ttft_s: f64,
    tpot_s: f64,
    input_tokens: u64,
    output_tokens: u64,
}

/// The breakdown of `db`'s rows by `by`, groups in `order` first. `duration_s`: the run's test duration.
fn breakdown(db: &Path, by: By, order: &[String], duration_s: f64) -> Result<Map<String, Value>> {
    let conn = rusqlite::Connection::open(db).with_context(|| format!("{}", db.display()))?;
    let key_column = match by {
        By::Model => "request",
        By::Endpoint => "endpoint",
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT {key_column}, success, latency, first_chunk_latency, time_per_output_token, \
         prompt_tokens, completion_tokens FROM result"
    ))?;
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut total = 0u64;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let raw: Option<String> = r.get(0)?;
        let key = match by {
            By::Model => raw
                .and_then(|b| serde_json::from_str::<Value>(&b).ok())
                .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_string)),
            By::Endpoint => raw,
        }
        .unwrap_or_default();
        let g = groups.entry(key).or_default();
        total += 1;
        g.requests += 1;
        if r.get::<_, i64>(1)? == 1 {
            g.successes += 1;
            g.latency_s += r.get::<_, Option<f64>>(2)?.unwrap_or(0.0);
            g.ttft_s += r.get::<_, Option<f64>>(3)?.unwrap_or(0.0);
            g.tpot_s += r.get::<_, Option<f64>>(4)?.unwrap_or(0.0);
            g.input_tokens += r.get::<_, Option<i64>>(5)?.unwrap_or(0).max(0) as u64;
            g.output_tokens += r.get::<_, Option<i64>>(6)?.unwrap_or(0).max(0) as u64;
        }
    }
    let mut keys: Vec<String> = order
        .iter()
        .filter(|k| groups.contains_key(*k))
        .cloned()
        .collect();
    keys.extend(groups.keys().filter(|k| !order.contains(k)).cloned());
    let mut out = Map::new();
    for key in keys {
        let g = &groups[&key];
        let ok = g.successes.max(1) as f64;
        let mean = |sum: f64| if g.successes == 0 { 0.0 } else { sum / ok };
        let throughput = if duration_s > 0.0 {
            g.output_tokens as f64 / duration_s
        } else {
            0.0
        };
        out.insert(
            key,
            json!({
                "Total Requests": g.requests,
                "Success Requests": g.successes,
                "Failed Requests": g.requests - g.successes,
                "Share (%)": round(100.0 * g.requests as f64 / total.max(1) as f64, 2),
                "Avg Latency (s)": round(mean(g.latency_s), 4),
                "Avg TTFT (ms)": round(mean(g.ttft_s) * 1000.0, 2),
                "Avg TPOT (ms)": round(mean(g.tpot_s) * 1000.0, 2),
                "Avg Input Tokens": round(mean(g.input_tokens as f64), 4),
                "Avg Output Tokens": round(mean(g.output_tokens as f64), 4),
                "Output Throughput (tok/s)": round(throughput, 4),
            }),
        );
    }
    Ok(out)
}

/// Writes and logs the breakdowns `plan` asks for (by model with `--lora-modules`, by endpoint with
/// `--url-strategy`) of the run in `dir`, whose test duration was `duration_s`.
pub(super) fn write(plan: &RunPlan, dir: &RunDir, duration_s: f64) -> Result<()> {
    let traffic = &plan.traffic;
    let mut wanted: Vec<(By, Vec<String>)> = Vec::new();
    if let Some(mix) = &traffic.models {
        wanted.push((
            By::Model,
            mix.models.iter().map(|m| m.to_string()).collect(),
        ));
    }
    if let Some(e) = &traffic.endpoints {
        wanted.push((By::Endpoint, e.urls.iter().map(|u| u.to_string()).collect()));
    }
    for (by, order) in wanted {
        let groups = breakdown(&dir.database(), by, &order, duration_s)?;
        tracing::info!("\nPer-{} breakdown:\n{}", by.name(), table(by, &groups));
        let path = match by {
            By::Model => dir.breakdown_by_model(),
            By::Endpoint => dir.breakdown_by_endpoint(),
        };
        dir.write_breakdown(&path, &Value::Object(groups))?;
    }
    Ok(())
}

/// The console table of a breakdown.
fn table(by: By, groups: &Map<String, Value>) -> String {
    let cols = [
        "Total Requests",
        "Failed Requests",
        "Share (%)",
        "Avg Latency (s)",
        "Avg TTFT (ms)",
        "Avg TPOT (ms)",
        "Output Throughput (tok/s)",
    ];
    let width = groups
        .keys()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(by.name().len());
    let mut s = format!("{:<width$}", by.name());
    for c in cols {
        s.push_str(&format!("  {c:>w$}", w = c.len().max(8)));
    }
    for (k, v) in groups {
        s.push_str(&format!("\n{k:<width$}"));
        for c in cols {
            s.push_str(&format!("  {:>w$}", v[c].to_string(), w = c.len().max(8)));
        }
    }
    s
}
