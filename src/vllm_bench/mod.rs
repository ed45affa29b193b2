//! `vllm bench serve`'s result file (what its `--save-result` writes, and what vLLM's sweep and plot tools
//! read), computed from a run's stored rows under vLLM's own definitions, for `--save-format vllm-bench`
//! and `llmperf export --format vllm-bench`.
//!
//! Where vLLM's definitions differ from evalscope's (docs/outputs.md, "vLLM's result format"): a stream
//! with no output chunk failed (evalscope counts a success with TTFT 0); E2EL ends at the last output
//! chunk (TTFT + ΣITL; evalscope's latency ends at the last JSON event, the usage chunk included); TPOT is
//! averaged over the requests with more than one output token only; mean, median, standard deviation
//! (population) and percentiles are numpy's, percentiles by linear interpolation (evalscope: nearest
//! rank); `max_output_tokens_per_s` counts chunks per wall-clock second, as vLLM does.

mod error;
pub mod stats;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use crate::run_folder::{RunDir, StoredRow};
pub use error::VllmBenchError;

/// The percentiles written for every metric: vLLM's `--metric-percentiles 50,90,95,99`.
pub const PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

/// One request as vLLM's client measures it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VllmRequest {
    /// vLLM's `success`: answered, and (a stream) with a first output chunk.
    pub success: bool,
    /// Send time, seconds.
    pub start_s: f64,
    /// Time to the first output chunk (the whole latency for a non-stream response); 0 on failure.
    pub ttft_s: f64,
    /// Gaps between output chunks.
    pub itl_s: Vec<f64>,
    /// End-to-end latency: to the last output chunk; 0 on failure.
    pub e2el_s: f64,
    /// Prompt tokens (the server's count).
    pub prompt_len: u64,
    /// Output tokens: the server's count, 1 when it gave none (vLLM without a tokenizer); 0 on failure.
    pub output_len: u64,
}

impl VllmRequest {
    /// The request a stored row records, under vLLM's definitions.
    pub fn from_row(row: &StoredRow) -> VllmRequest {
        let ttft = row.ttft.unwrap_or(0.0);
        let success = row.success && (!row.is_stream || ttft > 0.0);
        if !success {
            return VllmRequest {
                start_s: row.start_time,
                prompt_len: row.prompt_tokens.unwrap_or(0),
                ..VllmRequest::default()
            };
        }
        let (itl_s, e2el_s) = if row.is_stream {
            (row.itl.clone(), ttft + row.itl.iter().sum::<f64>())
        } else {
            (Vec::new(), row.latency.unwrap_or(ttft))
        };
        VllmRequest {
            success,
            start_s: row.start_time,
            ttft_s: ttft,
            itl_s,
            e2el_s,
            prompt_len: row.prompt_tokens.unwrap_or(0),
            output_len: row.completion_tokens.filter(|&n| n > 0).unwrap_or(1),
        }
    }
}

/// What the result says about the run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// vLLM's backend name for the endpoint (`openai-chat`, `openai`).
    pub backend: String,
    /// `--model`.
    pub model_id: String,
    /// The tokenizer (`--tokenizer-path`, else the model).
    pub tokenizer_id: String,
    /// `--number`.
    pub num_prompts: u64,
    /// Arrival rate, `None` for vLLM's `inf` (unpaced).
    pub request_rate: Option<f64>,
    /// `--burstiness` (1: Poisson).
    pub burstiness: f64,
    /// `--parallel` in closed loop, `None` in open loop.
    pub max_concurrency: Option<u64>,
    /// When the run ended, `YYYYmmdd-HHMMSS` (local time).
    pub date: String,
}

impl RunInfo {
    /// The settings recorded in a run's arguments; an error for runs vLLM's format does not describe.
    pub fn from_args(args: &Map<String, Value>, date: String) -> Result<RunInfo, VllmBenchError> {
        let text = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
        let api = text("api");
        if ["embed", "rerank"]
            .iter()
            .any(|w| api.to_lowercase().contains(w))
        {
            return Err(VllmBenchError::NotGeneration(api.to_string()));
        }
        let url = text("url");
        let path = url.split(['?', '#']).next().unwrap_or("");
        let backend = if path.ends_with("chat/completions") {
            "openai-chat"
        } else if path.ends_with("/completions") {
            "openai"
        } else if path.ends_with("/responses") {
            "openai-responses"
        } else {
            "openai-chat"
        };
        let model_id = match args.get("model").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => text("model_id").to_string(),
        };
        let tokenizer_id = match args.get("tokenizer_path").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => model_id.clone(),
        };
        let parallel = args.get("parallel").and_then(Value::as_i64).unwrap_or(-1);
        let rate = args.get("rate").and_then(Value::as_f64).unwrap_or(-1.0);
        let open_loop = args
            .get("open_loop")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let max_concurrency = (!open_loop && parallel > 0).then_some(parallel as u64);
        Ok(RunInfo {
            backend: backend.to_string(),
            model_id,
            tokenizer_id,
            num_prompts: args.get("number").and_then(Value::as_u64).unwrap_or(0),
            request_rate: (rate > 0.0 && rate.is_finite()).then_some(rate),
            burstiness: args
                .get("burstiness")
                .and_then(Value::as_f64)
                .unwrap_or(1.0),
            max_concurrency,
            date,
        })
    }

    /// The file name `vllm bench serve --save-result` gives this run:
    /// `<backend>-<rate>qps[-concurrency<N>]-<model basename>-<date>.json`.
    pub fn file_name(&self) -> String {
        let rate = match self.request_rate {
            Some(r) => crate::pyjson::float_repr(r),
            None => "inf".to_string(),
        };
        let concurrency = self
            .max_concurrency
            .map(|n| format!("-concurrency{n}"))
            .unwrap_or_default();
        let model = self.model_id.rsplit('/').next().unwrap_or("");
        let name = format!(
            "{}-{rate}qps{concurrency}-{model}-{}.json",
            self.backend, self.date
        );
        name.replace(['/', '\\'], "_")
    }
}

/// The four metrics with percentiles: vLLM's name and the values (seconds).
fn metric_keys(out: &mut Map<String, Value>, name: &str, values: &[f64]) {
    let sorted = stats::sorted(values);
    out.insert(
        format!("mean_{name}_ms"),
        json!(stats::mean(values) * 1000.0),
    );
    out.insert(
        format!("median_{name}_ms"),
        json!(stats::median(&sorted) * 1000.0),
    );
    out.insert(format!("std_{name}_ms"), json!(stats::std(values) * 1000.0));
    for p in PERCENTILES {
        out.insert(
            format!("p{}_{name}_ms", p as u64),
            json!(stats::percentile(&sorted, p) * 1000.0),
        );
    }
}

/// Peak output chunks in one second of the run, and peak requests in flight (successes only).
fn peaks(ok: &[&VllmRequest]) -> (f64, u64) {
    if ok.is_empty() {
        return (0.0, 0);
    }
    let min_start = ok.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min);
    let max_end = ok
        .iter()
        .map(|r| r.start_s + r.e2el_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let seconds = (max_end - min_start).ceil().max(0.0) as usize + 1;
    let mut per_second = vec![0u64; seconds];
    for r in ok {
        let mut t = r.start_s + r.ttft_s;
        let mut count = |t: f64| {
            let bucket = (t - min_start).trunc();
            if bucket >= 0.0 && (bucket as usize) < seconds {
                per_second[bucket as usize] += 1;
            }
        };
        count(t);
        for gap in &r.itl_s {
            t += gap;
            count(t);
        }
    }
    let mut events: Vec<(f64, i8)> = ok
        .iter()
        .flat_map(|r| [(r.start_s, 1), (r.start_s + r.e2el_s, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        now += i64::from(d);
        peak = peak.max(now);
    }
    (
        per_second.into_iter().max().unwrap_or(0) as f64,
        peak.max(0) as u64,
    )
}

/// The result object, in vLLM's key order. `duration_s` is the run's wall time (first send to last
/// completion).
pub fn result(info: &RunInfo, requests: &[VllmRequest], duration_s: f64) -> Map<String, Value> {
    let ok: Vec<&VllmRequest> = requests.iter().filter(|r| r.success).collect();
    let completed = ok.len() as u64;
    let total_input: u64 = ok.iter().map(|r| r.prompt_len).sum();
    let total_output: u64 = ok.iter().map(|r| r.output_len).sum();
    let per_s = |n: f64| {
        if duration_s > 0.0 {
            n / duration_s
        } else {
            0.0
        }
    };
    let ttfts: Vec<f64> = ok.iter().map(|r| r.ttft_s).collect();
    let tpots: Vec<f64> = ok
        .iter()
        .filter(|r| r.output_len > 1)
        .map(|r| (r.e2el_s - r.ttft_s) / (r.output_len - 1) as f64)
        .collect();
    let itls: Vec<f64> = ok.iter().flat_map(|r| r.itl_s.iter().copied()).collect();
    let e2els: Vec<f64> = ok.iter().map(|r| r.e2el_s).collect();
    let (max_output_tokens_per_s, max_concurrent_requests) = peaks(&ok);
    let mut out = Map::new();
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_string(), v);
    };
    put("date", json!(info.date));
    put("endpoint_type", json!(info.backend));
    put("backend", json!(info.backend));
    put("label", Value::Null);
    put("model_id", json!(info.model_id));
    put("tokenizer_id", json!(info.tokenizer_id));
    put("num_prompts", json!(info.num_prompts));
    put(
        "request_rate",
        info.request_rate.map_or(json!("inf"), |r| json!(r)),
    );
    put("burstiness", json!(info.burstiness));
    put("max_concurrency", json!(info.max_concurrency));
    put("duration", json!(duration_s));
    put("completed", json!(completed));
    put("failed", json!(requests.len() as u64 - completed));
    put("total_input_tokens", json!(total_input));
    put("total_output_tokens", json!(total_output));
    put("request_throughput", json!(per_s(completed as f64)));
    put("request_goodput", Value::Null);
    put("output_throughput", json!(per_s(total_output as f64)));
    put(
        "total_token_throughput",
        json!(per_s((total_input + total_output) as f64)),
    );
    put("max_output_tokens_per_s", json!(max_output_tokens_per_s));
    put("max_concurrent_requests", json!(max_concurrent_requests));
    put("rtfx", json!(0.0));
    metric_keys(&mut out, "ttft", &ttfts);
    metric_keys(&mut out, "tpot", &tpots);
    metric_keys(&mut out, "itl", &itls);
    metric_keys(&mut out, "e2el", &e2els);
    out
}

/// The run's wall time from its rows: last completion minus first send (evalscope's test duration).
pub fn duration_s(rows: &[StoredRow]) -> f64 {
    let first = rows
        .iter()
        .map(|r| r.start_time)
        .filter(|t| *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    let last = rows
        .iter()
        .map(|r| r.completed_time)
        .fold(f64::NEG_INFINITY, f64::max);
    if last >= first {
        last - first
    } else {
        0.0
    }
}

/// A run folder ready to export: its settings and the result.
pub struct Export {
    /// The run.
    pub dir: RunDir,
    /// Its settings.
    pub info: RunInfo,
    /// The result object.
    pub result: Map<String, Value>,
}

/// Reads run `dir` and computes its result; an error names the run (no arguments file, no database, a
/// run of another kind).
pub fn prepare(dir: &RunDir) -> Result<Export, VllmBenchError> {
    let name = || dir.path().display().to_string();
    let args = dir
        .read_args()
        .ok_or_else(|| VllmBenchError::NoArgs(name()))?;
    let modified = std::fs::metadata(dir.database())
        .and_then(|m| m.modified())
        .map_err(|e| VllmBenchError::NoDatabase {
            run: name(),
            reason: e.to_string(),
        })?;
    let date = chrono::DateTime::<chrono::Local>::from(modified)
        .format("%Y%m%d-%H%M%S")
        .to_string();
    let info = RunInfo::from_args(&args, date).map_err(|e| VllmBenchError::Run {
        run: name(),
        error: Box::new(e),
    })?;
    let rows = dir.read_rows().map_err(|e| VllmBenchError::Rows {
        run: name(),
        reason: format!("{e:#}"),
    })?;
    let requests: Vec<VllmRequest> = rows.iter().map(VllmRequest::from_row).collect();
    let result = result(&info, &requests, duration_s(&rows));
    Ok(Export {
        dir: dir.clone(),
        info,
        result,
    })
}

impl Export {
    /// Writes the result into the run's folder, or into `into` under vLLM's file name; returns the path.
    pub fn write(&self, into: Option<&Path>) -> Result<PathBuf> {
        match into {
            None => {
                self.dir.write_vllm_bench(&self.result)?;
                Ok(self.dir.vllm_bench())
            }
            Some(folder) => {
                std::fs::create_dir_all(folder)
                    .with_context(|| format!("creating {}", folder.display()))?;
                let path = folder.join(self.info.file_name());
                std::fs::write(&path, crate::pyjson::dumps(&self.result))
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(path)
            }
        }
    }
}

#[cfg(test)]
mod tests;
