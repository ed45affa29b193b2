//! Writing a run root's files: each run's arguments and results as evalscope writes them (Python's JSON
//! text, indent 4), llmperf's files beside them, and the root's reports. A run's results are written the
//! moment it ends, by the runner and by `llmperf merge` through the same [`RunDir::write_results`].

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use super::layout::{RunDir, RunRoot};
use crate::metrics::{BenchmarkSummary, PercentileTable, TraceSummary, WorkloadTimeline};
use crate::pyjson;

fn write_text(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Python's `json.dumps(v, indent=2, ensure_ascii=False)` plus a newline (the AgentX files).
fn write_indent2(path: &std::path::Path, v: &Value) -> Result<()> {
    write_text(
        path,
        &(pyjson::to_string_with(v, pyjson::PyFormatter::indent2()) + "\n"),
    )
}

/// What a finished run writes: evalscope's summary, percentiles and, when a request succeeded, its
/// workload files.
pub struct RunResults<'a> {
    /// The summary.
    pub summary: &'a BenchmarkSummary,
    /// The percentiles.
    pub percentiles: &'a PercentileTable,
    /// The cumulative-token timeline; its files are written only when a request succeeded (as evalscope).
    pub timeline: &'a WorkloadTimeline,
}

impl RunRoot {
    /// Creates the root folder.
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(self.path())
            .with_context(|| format!("--outputs-dir: cannot create {}", self.path().display()))
    }

    /// Writes the end-of-sweep text report.
    pub fn write_performance_summary(&self, text: &str) -> Result<()> {
        write_text(&self.performance_summary(), text)
    }

    /// Writes the SLA auto-tune's summary.
    pub fn write_sla_summary(&self, json: &str) -> Result<()> {
        write_text(&self.sla_summary(), json)
    }

    /// Writes the repeat summary of run `spec`'s point (`--repeat`).
    pub fn write_repeat_summary(&self, spec: &crate::plan::RunSpec, v: &Value) -> Result<()> {
        write_text(&self.repeat_summary(spec), &pyjson::dumps_indent4(v))
    }

    /// Writes the AgentX sweep summary of `variant`.
    pub fn write_agentx_sweep_summary(&self, variant: &str, v: &Value) -> Result<()> {
        let path = self.agentx_sweep_summary(variant);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_indent2(&path, v)
    }
}

impl RunDir {
    /// Creates the run folder.
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(self.path())
            .with_context(|| format!("creating {}", self.path().display()))
    }

    /// Writes the run's arguments.
    pub fn write_args(&self, args: &Map<String, Value>) -> Result<()> {
        write_text(&self.args(), &pyjson::dumps_indent4(args))
    }

    /// Writes the run's summary, percentiles and (when a request succeeded) workload files.
    pub fn write_results(&self, r: &RunResults<'_>) -> Result<()> {
        write_text(&self.summary(), &r.summary.to_json_string())?;
        write_text(&self.percentiles(), &r.percentiles.to_json_string())?;
        if let Some(w) = r.timeline.throughput() {
            write_text(&self.workload_throughput(), &w.to_json_string())?;
            r.timeline.write_json_file(&self.workload_timeline())?;
        }
        Ok(())
    }

    /// Writes the speed table of a `speed_benchmark` dataset.
    pub fn write_speed_benchmark(&self, rows: &[Map<String, Value>]) -> Result<()> {
        write_text(&self.speed_benchmark(), &pyjson::dumps_indent4(&rows))
    }

    /// Writes the server's series (`--server-metrics`).
    pub fn write_server_metrics(&self, json: &Value) -> Result<()> {
        write_text(&self.server_metrics(), &pyjson::dumps_indent4(json))
    }

    /// Writes the per-trace summary (`--multi-turn`), when any trace succeeded.
    pub fn write_trace_summary(&self, trace: &TraceSummary) -> Result<()> {
        if trace.is_empty() {
            return Ok(());
        }
        write_text(&self.trace_summary(), &trace.to_json_string())
    }

    /// Writes the run's AgentX summary.
    pub fn write_agentx_summary(&self, v: &Value) -> Result<()> {
        write_indent2(&self.agentx_summary(), v)
    }
}
