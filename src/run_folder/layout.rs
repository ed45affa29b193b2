//! The layout of a run root, and the only place that spells its names: the root
//! (`<outputs-dir>/[<YYYYmmdd_HHMMSS>/]<name>[_shard<K>of<N>]`), the files at its top, each run's folder
//! name (`parallel_<P>_number_<N>`, `rate_<R>_number_<N>`, `sla_tuning/sla_<var>_<value>_run_<i>`,
//! `agentx_<variant>/parallel_<P>`) and the files in a run folder. evalscope's names are evalscope
//! 1.14.1's; llmperf's own files sit beside them.
//!
//! `--repeat K`: repeat 1 is the root as usual, repeat k ≥ 2 a complete run root in `repeat_<k>/` (so
//! evalscope's `RunLoader.load_all` and the Python wrapper read the root, or any repeat, as a plain sweep),
//! and each point's repeat summary is `<point>_repeats.json` beside the point's folder:
//!
//! ```text
//! <root>/parallel_4_number_100/               repeat 1
//! <root>/parallel_4_number_100_repeats.json   mean, sd, CV, 95 % interval of each run-level metric
//! <root>/repeat_2/parallel_4_number_100/      repeat 2
//! <root>/repeat_3/parallel_4_number_100/      repeat 3
//! ```

use std::path::{Path, PathBuf};

use crate::plan::{Load, RunRole, RunSpec};

/// Every log line of every run.
const LOG: &str = "benchmark.log";
/// The end-of-sweep report (also printed).
const PERFORMANCE_SUMMARY: &str = "performance_summary.txt";
/// llmperf's self-contained HTML report.
const REPORT_HTML: &str = "perf_report.html";
/// `--enable-progress-tracker`.
const PROGRESS: &str = "progress.json";
/// `--sla-auto-tune`: the search's result.
const SLA_SUMMARY: &str = "sla_summary.json";
/// `--sla-auto-tune`: the folder of the probe runs.
const SLA_TUNING: &str = "sla_tuning";
/// A run's arguments.
const ARGS: &str = "benchmark_args.json";
/// A run's rows.
const DATABASE: &str = "benchmark_data.db";
/// A run's summary.
const SUMMARY: &str = "benchmark_summary.json";
/// A run's percentiles.
const PERCENTILES: &str = "benchmark_percentile.json";
/// A run's token throughput windows.
const WORKLOAD_THROUGHPUT: &str = "workload_throughput.json";
/// A run's cumulative tokens over time.
const WORKLOAD_TIMELINE: &str = "workload_timeline.json";
/// `speed_benchmark` datasets: decode speed per prompt length.
const SPEED_BENCHMARK: &str = "speed_benchmark.json";
/// `--server-metrics`: the server's series over the run.
const SERVER_METRICS: &str = "server_metrics.json";
/// `--multi-turn`: the per-trace summary.
const TRACE_SUMMARY: &str = "trace_summary.json";
/// `--scenario agentx`: one run's summary.
const AGENTX_SUMMARY: &str = "agentx_summary.json";
/// `--scenario agentx`: the sweep's summaries by concurrency.
const AGENTX_SWEEP_SUMMARY: &str = "agentx_sweep_summary.json";
/// What a shard appends to its root's name: `_shard<K>of<N>`.
const SHARD_MARK: &str = "_shard";
/// `--repeat`: repeat k ≥ 2 of the sweep is a complete run root in `<root>/repeat_<k>/`.
const REPEAT_DIR: &str = "repeat_";
/// `--repeat`: the summary of a point's repeats sits beside its folder, `<point>_repeats.json`.
const REPEATS_SUFFIX: &str = "_repeats.json";

/// Where one invocation's results go and what they are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRoot {
    path: PathBuf,
}

impl RunRoot {
    /// The root at `path` (an existing root, or one `llmperf merge` creates).
    pub fn at(path: impl Into<PathBuf>) -> RunRoot {
        RunRoot { path: path.into() }
    }

    /// `<outputs_dir>/[<stamp>/]<name>`, and with `shard` (K, N) of more than one shard
    /// `<name>_shard<K>of<N>` (K zero-padded to N − 1's width), so shards never share a root.
    pub fn compose(
        outputs_dir: &Path,
        stamp: Option<&str>,
        name: &str,
        shard: Option<(u32, u32)>,
    ) -> RunRoot {
        let mut path = outputs_dir.to_path_buf();
        if let Some(stamp) = stamp {
            path.push(stamp);
        }
        match shard.filter(|(_, count)| *count > 1) {
            Some((index, count)) => {
                let width = (count - 1).to_string().len();
                path.push(format!("{name}{SHARD_MARK}{index:0width$}of{count}"));
            }
            None => path.push(name),
        }
        RunRoot { path }
    }

    /// A shard root's name without its `_shard<K>of<N>` mark (the merged root's default name).
    pub fn unsharded_name(name: &str, count: u32) -> &str {
        match name.rfind(SHARD_MARK) {
            Some(i) if name[i..].ends_with(&format!("of{count}")) => &name[..i],
            _ => name,
        }
    }

    /// The root folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run root of repeat `k` (`--repeat`): this root for k ≤ 1, else `<root>/repeat_<k>`, itself a
    /// complete run root (evalscope's loader reads either).
    pub fn repeat(&self, k: u32) -> RunRoot {
        if k <= 1 {
            return self.clone();
        }
        RunRoot {
            path: self.path.join(format!("{REPEAT_DIR}{k}")),
        }
    }

    /// The repeat number a folder name `repeat_<k>` (k ≥ 2) names.
    pub fn repeat_index(name: &str) -> Option<u32> {
        name.strip_prefix(REPEAT_DIR)?
            .parse()
            .ok()
            .filter(|k| *k >= 2)
    }

    /// The summary of the repeats of run `spec`'s point (`--repeat`), beside repeat 1's folder.
    pub fn repeat_summary(&self, spec: &RunSpec) -> PathBuf {
        let point = RunSpec {
            role: RunRole::Sweep,
            ..spec.clone()
        };
        self.run(&point).repeat_summary()
    }

    /// The log of every run.
    pub fn log(&self) -> PathBuf {
        self.path.join(LOG)
    }

    /// The end-of-sweep text report.
    pub fn performance_summary(&self) -> PathBuf {
        self.path.join(PERFORMANCE_SUMMARY)
    }

    /// The HTML report.
    pub fn report_html(&self) -> PathBuf {
        self.path.join(REPORT_HTML)
    }

    /// `--enable-progress-tracker`'s file.
    pub fn progress(&self) -> PathBuf {
        self.path.join(PROGRESS)
    }

    /// The SLA auto-tune's summary.
    pub fn sla_summary(&self) -> PathBuf {
        self.path.join(SLA_SUMMARY)
    }

    /// The AgentX sweep summary of `variant` (`256k`, `full`).
    pub fn agentx_sweep_summary(&self, variant: &str) -> PathBuf {
        self.path
            .join(format!("agentx_{variant}"))
            .join(AGENTX_SWEEP_SUMMARY)
    }

    /// The folder of run `spec`.
    pub fn run(&self, spec: &RunSpec) -> RunDir {
        self.run_named(&run_name(spec))
    }

    /// The run folder `name` (as [`run_name`] gave it) in this root.
    pub fn run_named(&self, name: &str) -> RunDir {
        RunDir {
            path: self.path.join(name),
        }
    }
}

/// A run's folder name relative to its root, as evalscope names it: `parallel_<P>_number_<N>` (closed
/// loop), `rate_<R>_number_<N>` (open loop, `R` as Python prints the float), an SLA probe's
/// `sla_tuning/sla_<var>_<value>_run_<i>`, an AgentX run's `agentx_<variant>/parallel_<P>`, a repeat's
/// `repeat_<k>/` and its point's name.
pub fn run_name(spec: &RunSpec) -> String {
    match spec.role {
        RunRole::Repeat { repeat, .. } => {
            let point = RunSpec {
                role: RunRole::Sweep,
                ..spec.clone()
            };
            format!("{REPEAT_DIR}{repeat}/{}", run_name(&point))
        }
        RunRole::Sweep => match spec.load {
            Load::Closed { parallel, .. } => format!("parallel_{parallel}_number_{}", spec.number),
            Load::Open { .. } => format!(
                "rate_{}_number_{}",
                crate::pyjson::float_repr(spec.load.rate_as_written()),
                spec.number
            ),
            Load::Trace {
                rate_as_typed,
                number_as_typed,
            } => format!(
                "rate_{}_number_{number_as_typed}",
                crate::pyjson::float_repr(rate_as_typed)
            ),
        },
        RunRole::SlaProbe {
            variable,
            value,
            iteration,
        } => format!(
            "{SLA_TUNING}/sla_{}_{value}_run_{iteration}",
            variable.name()
        ),
        RunRole::Agentx { variant } => format!(
            "agentx_{}/parallel_{}",
            variant.as_str(),
            spec.load.parallel_as_written()
        ),
    }
}

/// One run's folder and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// The run folder at `path`.
    pub fn at(path: impl Into<PathBuf>) -> RunDir {
        RunDir { path: path.into() }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its folder name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The summary of this run's repeats, beside its folder (`<folder>_repeats.json`).
    pub fn repeat_summary(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(REPEATS_SUFFIX);
        self.path.with_file_name(name)
    }

    /// Whether `path` is a run folder: it holds a run's arguments.
    pub fn is_run(path: &Path) -> bool {
        path.join(ARGS).is_file()
    }

    /// The run's arguments.
    pub fn args(&self) -> PathBuf {
        self.path.join(ARGS)
    }

    /// The run's rows (SQLite).
    pub fn database(&self) -> PathBuf {
        self.path.join(DATABASE)
    }

    /// The run's summary.
    pub fn summary(&self) -> PathBuf {
        self.path.join(SUMMARY)
    }

    /// The run's percentiles.
    pub fn percentiles(&self) -> PathBuf {
        self.path.join(PERCENTILES)
    }

    /// The run's throughput windows.
    pub fn workload_throughput(&self) -> PathBuf {
        self.path.join(WORKLOAD_THROUGHPUT)
    }

    /// The run's cumulative-token timeline.
    pub fn workload_timeline(&self) -> PathBuf {
        self.path.join(WORKLOAD_TIMELINE)
    }

    /// `speed_benchmark` datasets: the speed table.
    pub fn speed_benchmark(&self) -> PathBuf {
        self.path.join(SPEED_BENCHMARK)
    }

    /// `--server-metrics`: the server's series.
    pub fn server_metrics(&self) -> PathBuf {
        self.path.join(SERVER_METRICS)
    }

    /// `--multi-turn`: the per-trace summary.
    pub fn trace_summary(&self) -> PathBuf {
        self.path.join(TRACE_SUMMARY)
    }

    /// `--scenario agentx`: the run's AgentX summary.
    pub fn agentx_summary(&self) -> PathBuf {
        self.path.join(AGENTX_SUMMARY)
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroUsize;

    use super::*;
    use crate::plan::sla::Variable;
    use crate::plan::Rate;
    use crate::scenario::config::Variant;

    fn spec(load: Load, number: u64, role: RunRole) -> RunSpec {
        RunSpec {
            number,
            load,
            warmup: 0,
            dataset_offset: 0,
            role,
        }
    }

    #[test]
    fn run_names_are_evalscopes() {
        let closed = Load::Closed {
            parallel: NonZeroUsize::new(4).unwrap(),
            pacing: Rate::new(2.0),
        };
        let open = Load::Open {
            rate: Rate::new(5.0).unwrap(),
        };
        let half = Load::Open {
            rate: Rate::new(0.5).unwrap(),
        };
        let trace = Load::Trace {
            rate_as_typed: -1.0,
            number_as_typed: 1000,
        };
        assert_eq!(
            run_name(&spec(closed, 10, RunRole::Sweep)),
            "parallel_4_number_10"
        );
        assert_eq!(
            run_name(&spec(open, 10, RunRole::Sweep)),
            "rate_5.0_number_10"
        );
        assert_eq!(
            run_name(&spec(half, 20, RunRole::Sweep)),
            "rate_0.5_number_20"
        );
        assert_eq!(
            run_name(&spec(trace, 7, RunRole::Sweep)),
            "rate_-1.0_number_1000"
        );
        let probe = RunRole::SlaProbe {
            variable: Variable::Parallel,
            value: 4,
            iteration: 0,
        };
        assert_eq!(
            run_name(&spec(closed, 8, probe)),
            "sla_tuning/sla_parallel_4_run_0"
        );
        let agentx = RunRole::Agentx {
            variant: Variant::K256,
        };
        assert_eq!(run_name(&spec(closed, 8, agentx)), "agentx_256k/parallel_4");
    }

    #[test]
    fn shard_roots_carry_their_mark() {
        let out = Path::new("o");
        let root = |shard| RunRoot::compose(out, Some("20260101_000000"), "m", shard);
        assert_eq!(root(None).path(), Path::new("o/20260101_000000/m"));
        assert_eq!(root(Some((0, 1))).path(), Path::new("o/20260101_000000/m"));
        assert_eq!(
            root(Some((3, 12))).path(),
            Path::new("o/20260101_000000/m_shard03of12")
        );
        assert_eq!(
            RunRoot::compose(out, None, "m", Some((0, 4))).path(),
            Path::new("o/m_shard0of4")
        );
        assert_eq!(RunRoot::unsharded_name("m_shard03of12", 12), "m");
        assert_eq!(RunRoot::unsharded_name("m_shard03of12", 4), "m_shard03of12");
        assert_eq!(RunRoot::unsharded_name("plain", 4), "plain");
    }

    #[test]
    fn repeats_are_run_roots_inside_the_root() {
        let root = RunRoot::at("o/m");
        assert_eq!(root.repeat(1), root);
        assert_eq!(root.repeat(3).path(), Path::new("o/m/repeat_3"));
        assert_eq!(RunRoot::repeat_index("repeat_3"), Some(3));
        for other in ["repeat_1", "repeat_x", "parallel_1_number_2"] {
            assert_eq!(RunRoot::repeat_index(other), None, "{other}");
        }
        let closed = Load::Closed {
            parallel: std::num::NonZeroUsize::new(4).unwrap(),
            pacing: None,
        };
        let point = spec(closed, 10, RunRole::Sweep);
        assert_eq!(
            root.repeat_summary(&point),
            Path::new("o/m/parallel_4_number_10_repeats.json")
        );
        assert_eq!(
            root.repeat(2).run(&point).path(),
            Path::new("o/m/repeat_2/parallel_4_number_10")
        );
        let again = spec(
            closed,
            10,
            RunRole::Repeat {
                repeat: 2,
                point: 0,
            },
        );
        assert_eq!(root.run(&again), root.repeat(2).run(&point));
        assert_eq!(root.repeat_summary(&again), root.repeat_summary(&point));
    }
}
