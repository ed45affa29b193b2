//! `llmperf compare BASE NEW`: from two sets of results to a verdict. BASE and NEW are run roots or run
//! folders — llmperf's or evalscope perf 1.14.1's own, the same files — matched point by point
//! ([`side`]); each run's rows are read back from its database ([`sample`]); every metric gets its change,
//! a 95 % interval and a verdict ([`verdict`], statistics in [`crate::stats`]); `--fail-on` gates turn
//! verdicts into an exit code ([`gate`]); [`render`] writes the console table, Markdown, JSON and JUnit.
//!
//! What the intervals assume is in docs/compare.md: rows independent within a run (one request's TTFT
//! does not tell another's), runs independent of each other; repeats (`--repeat`) drop the first
//! assumption's consequences for run-level drift.

pub mod gate;
pub mod metric;
pub mod render;
mod root_error;
pub mod sample;
pub mod side;
pub mod verdict;

use std::path::{Path, PathBuf};

use gate::{Gate, Outcome};
use metric::Metric;
use sample::RunSample;
use side::{Point, PointKey, Side};
use verdict::MetricResult;

/// Why two sets of results cannot be compared (all bad input: exit 2, nothing written).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// BASE or NEW is not a run root or run folder.
    #[error("{side} {}: not a run root or run folder: {why}", path.display())]
    NotARun {
        /// "BASE" or "NEW".
        side: &'static str,
        /// As given.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A run folder that cannot be read.
    #[error("{}: {why}", path.display())]
    BadRun {
        /// The run folder.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// No point of BASE is a point of NEW.
    #[error("no point of BASE matches a point of NEW (matched by parallel/rate and number): BASE has {base}; NEW has {new}")]
    NothingMatched {
        /// BASE's points.
        base: String,
        /// NEW's points.
        new: String,
    },
}

/// A gate's outcome at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct GateResult {
    /// The gate (index into [`Report::gates`]).
    pub gate: usize,
    /// Its outcome.
    pub outcome: Outcome,
    /// Whether it fails the comparison (a failure, or inconclusive under `--strict`).
    pub fails: bool,
    /// The metric's result it judged.
    pub result: MetricResult,
}

/// One matched point.
#[derive(Debug, Clone)]
pub struct PointReport {
    /// Which point.
    pub key: PointKey,
    /// BASE's runs of it.
    pub base_runs: usize,
    /// NEW's runs of it.
    pub new_runs: usize,
    /// Every shown metric (and every gated one).
    pub metrics: Vec<MetricResult>,
    /// Every gate's outcome here.
    pub gates: Vec<GateResult>,
}

/// The whole comparison.
#[derive(Debug, Clone)]
pub struct Report {
    /// BASE as given.
    pub base: PathBuf,
    /// NEW as given.
    pub new: PathBuf,
    /// The matched points, in BASE's order.
    pub points: Vec<PointReport>,
    /// Points only BASE has.
    pub only_base: Vec<PointKey>,
    /// Points only NEW has.
    pub only_new: Vec<PointKey>,
    /// Differences in setup (model, dataset, lengths) and failed requests: allowed, but said.
    pub warnings: Vec<String>,
    /// The gates (`--fail-on`).
    pub gates: Vec<Gate>,
    /// `--strict`: an inconclusive gate fails.
    pub strict: bool,
}

impl Report {
    /// Every failing gate: (point, outcome).
    pub fn failures(&self) -> Vec<(&PointKey, &GateResult)> {
        self.points
            .iter()
            .flat_map(|p| p.gates.iter().filter(|g| g.fails).map(move |g| (&p.key, g)))
            .collect()
    }
}

/// The arguments whose difference is worth a warning: what runs, on what, at which lengths, in which
/// prefix-cache protocol (`--reset-prefix-cache`, `--target-cache-hit-rate`: docs/cache-control.md).
const SETUP_KEYS: [&str; 14] = [
    "model",
    "api",
    "dataset",
    "dataset_path",
    "stream",
    "max_tokens",
    "min_tokens",
    "min_prompt_length",
    "max_prompt_length",
    "prefix_length",
    "tokenizer_path",
    "extra_args",
    "reset_prefix_cache",
    "target_cache_hit_rate",
];

fn setup_warnings(base: &Point, new: &Point, out: &mut Vec<String>) {
    for key in SETUP_KEYS {
        let (b, n) = (base.args.get(key), new.args.get(key));
        if b != n {
            let show = |v: Option<&serde_json::Value>| v.map_or("(none)".into(), |v| v.to_string());
            let w = format!("{key} differs: BASE {} → NEW {}", show(b), show(n));
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
}

fn sample_warnings(label: &str, key: &PointKey, runs: &[RunSample], out: &mut Vec<String>) {
    let failed: usize = runs.iter().map(|r| r.failed).sum();
    let total: usize = runs.iter().map(|r| r.failed + r.succeeded).sum();
    if failed > 0 {
        out.push(format!(
            "{label} {key}: {failed} of {total} requests failed (left out of every metric)"
        ));
    }
}

/// A gate on a mean judged from one run a side: its row-based interval assumes independent rows and
/// cannot see drift between runs, which end to end made it too narrow (docs/compare.md, calibration).
fn mean_gate_warnings(results: &[GateResult], gates: &[Gate], out: &mut Vec<String>) {
    for r in results {
        let gate = &gates[r.gate];
        let single = r.result.method == verdict::Method::Rows;
        if single && gate.metric.statistic == metric::Statistic::Mean {
            let w = format!(
                "--fail-on {}: a mean judged from one run a side: its interval from the rows assumes \
                 independent rows and misses drift between runs (end to end it held the true change in \
                 83-84 % of pairs, not 95 %); gate a mean on --repeat 3 runs (docs/compare.md)",
                gate.spec
            );
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
}

/// Compares BASE and NEW, judging `gates` (`strict`: an inconclusive gate fails).
pub fn compare(
    base: &Path,
    new: &Path,
    gates: Vec<Gate>,
    strict: bool,
) -> Result<Report, CompareError> {
    let b = Side::read("BASE", base)?;
    let n = Side::read("NEW", new)?;
    let mut metrics = Metric::shown();
    for g in &gates {
        if !metrics.contains(&g.metric) {
            metrics.push(g.metric);
        }
    }
    let mut report = Report {
        base: base.to_path_buf(),
        new: new.to_path_buf(),
        points: Vec::new(),
        only_base: Vec::new(),
        only_new: n
            .points
            .iter()
            .filter(|p| !b.points.iter().any(|q| q.key == p.key))
            .map(|p| p.key)
            .collect(),
        warnings: Vec::new(),
        gates,
        strict,
    };
    for bp in &b.points {
        let Some(np) = n.points.iter().find(|p| p.key == bp.key) else {
            report.only_base.push(bp.key);
            continue;
        };
        setup_warnings(bp, np, &mut report.warnings);
        let read = |p: &Point| -> Result<Vec<RunSample>, CompareError> {
            p.runs.iter().map(RunSample::read).collect()
        };
        let (bs, ns) = (read(bp)?, read(np)?);
        sample_warnings("BASE", &bp.key, &bs, &mut report.warnings);
        sample_warnings("NEW", &np.key, &ns, &mut report.warnings);
        let results: Vec<MetricResult> = metrics
            .iter()
            .map(|m| verdict::judge(*m, &bs, &ns))
            .collect();
        let gate_results: Vec<GateResult> = report
            .gates
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let result = results
                    .iter()
                    .find(|r| r.metric == g.metric)
                    .expect("every gated metric is judged")
                    .clone();
                let outcome = g.judge(&result);
                GateResult {
                    gate: i,
                    outcome,
                    fails: outcome == Outcome::Fail || (strict && outcome == Outcome::Inconclusive),
                    result,
                }
            })
            .collect();
        mean_gate_warnings(&gate_results, &report.gates, &mut report.warnings);
        report.points.push(PointReport {
            key: bp.key,
            base_runs: bs.len(),
            new_runs: ns.len(),
            metrics: results,
            gates: gate_results,
        });
    }
    if report.points.is_empty() {
        let list = |s: &Side| {
            s.points
                .iter()
                .map(|p| p.key.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(CompareError::NothingMatched {
            base: list(&b),
            new: list(&n),
        });
    }
    Ok(report)
}
