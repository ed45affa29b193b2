//! Calibration of `llmperf compare` (docs/compare.md): do its 95 % intervals hold the true change 95 % of
//! the time, how often does `--fail-on p99_ttft:+10%` catch a +25 % slowdown, how often does it cry wolf?
//! Printed figures, not a test.
//!
//! 1. **The statistics alone** (in this process, in seconds): for run sizes 500–2000, `--model-pairs` pairs of
//!    simulated runs per true change (TTFT log-normal with the given CV, multiplied by 1 + change), through
//!    the same interval functions `compare` uses (`llmperf::stats`): coverage of the `p99_ttft` and
//!    `avg_ttft` intervals and how often the gate fails. This picks the recommended run size.
//! 2. **End to end** (the figures the docs quote): `--pairs` A/B pairs of real runs of the built-in simulator
//!    (`--api mock --mock-jitter-cv 0.2`, TTFT `--ttft-ms` × (1 + change)) at the recommended size, each pair
//!    compared by `llmperf compare --format json --fail-on p99_ttft:+10%`: coverage at 0 %, +10 %, +20 %,
//!    power at +25 %, false alarms at 0 % (A/A) and +5 %. Pair i's NEW runs of every change share one BASE run
//!    (seeded by i), so each change's pairs are independent of each other; every run has its own seed. The
//!    runs are this program re-run as `llmperf` (`--as-llmperf`), so no other binary is needed; each run's
//!    simulator is `llmperf serve-mock` in a process of its own (so the simulator's timers never share the
//!    client's runtime or CPU), unless `--in-process` asks for `--api mock`.
//!
//! With `--repeat K` each side of a pair is K repeats (`llmperf --repeat K`), and `compare` takes every
//! interval from the variation between them, which also covers drift from run to run.
//!
//! Run (release): `cargo run --release --example compare_calibration` — or `-- --pairs N --number R
//! --parallel P --ttft-ms T --cv C --model-pairs M --sizes N… --repeat K --changes 0 25 [--model-only |
//! --e2e-only]`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use clap::Parser;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use llmperf::stats::change::{mean_change, quantile_change};
use llmperf::stats::quantile::{order_statistic_ranks, rank_index};
use llmperf::stats::{MeanEstimate, QuantileEstimate};

/// The true changes of TTFT tried, as fractions.
const CHANGES: [f64; 5] = [0.0, 0.05, 0.10, 0.20, 0.25];
/// The gate's threshold (`p99_ttft:+10%`).
const GATE: f64 = 0.10;

#[derive(Debug, Parser)]
struct Args {
    /// End-to-end pairs per change.
    #[arg(long, default_value_t = 100)]
    pairs: usize,
    /// Requests per run (the recommended size).
    #[arg(long, default_value_t = 1500)]
    number: u64,
    /// `--parallel` of each run.
    #[arg(long, default_value_t = 100)]
    parallel: u64,
    /// The simulator's base TTFT, ms.
    #[arg(long, default_value_t = 100.0)]
    ttft_ms: f64,
    /// `--mock-jitter-cv`.
    #[arg(long, default_value_t = 0.2)]
    cv: f64,
    /// Simulated pairs per change and run size in part 1.
    #[arg(long, default_value_t = 2000)]
    model_pairs: usize,
    /// The run sizes (requests per run) part 1 tries.
    #[arg(long, num_args = 1.., default_values_t = [500usize, 1000, 1500, 2000])]
    sizes: Vec<usize>,
    /// Part 1 only.
    #[arg(long)]
    model_only: bool,
    /// Part 2 only.
    #[arg(long)]
    e2e_only: bool,
    /// Part 2: the simulator in the client's process (`--api mock`) instead of `serve-mock` in its own.
    #[arg(long)]
    in_process: bool,
    /// Part 2: each side of a pair is `--repeat K` runs of `--number` requests (its own simulator, the
    /// same seed), so `compare` takes its intervals from the variation between the repeats.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Part 2: only these true changes, in percent (of 0, 5, 10, 20, 25; each keeps its seeds).
    #[arg(long, num_args = 1.., value_parser = ["0", "5", "10", "20", "25"])]
    changes: Vec<String>,
}

impl Args {
    /// Part 2's changes: `(index in CHANGES, change)`.
    fn e2e_changes(&self) -> Vec<(usize, f64)> {
        CHANGES
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, c)| {
                self.changes.is_empty()
                    || self
                        .changes
                        .iter()
                        .any(|p| p.parse::<f64>().is_ok_and(|p| (p / 100.0 - c).abs() < 1e-9))
            })
            .collect()
    }
}

/// Coverage and gate tallies of one change.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    pairs: usize,
    p99_covered: usize,
    avg_covered: usize,
    gate_failed: usize,
    /// p99 intervals the data could not bound.
    unbounded: usize,
}

impl Tally {
    fn pct(n: usize, of: usize) -> String {
        format!("{:5.1}%", 100.0 * n as f64 / of.max(1) as f64)
    }
}

fn print_table(title: &str, rows: &[(f64, Tally)]) {
    println!("{title}");
    println!("  change  pairs  p99_ttft covered  avg_ttft covered  gate p99_ttft:+10% fails  p99 unbounded");
    for (c, t) in rows {
        println!(
            "  {:>+5.0}%  {:>5}  {:>16}  {:>16}  {:>24}  {:>13}",
            c * 100.0,
            t.pairs,
            Tally::pct(t.p99_covered, t.pairs),
            Tally::pct(t.avg_covered, t.pairs),
            Tally::pct(t.gate_failed, t.pairs),
            t.unbounded
        );
    }
}

/// Part 1: one simulated pair's (p99 interval, mean interval) of the relative change.
fn model_pair(rng: &mut ChaCha8Rng, dist: &LogNormal<f64>, n: usize, change: f64) -> Tally {
    let mut draw = |scale: f64| {
        let mut v: Vec<f64> = (0..n).map(|_| scale * dist.sample(rng)).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (b, nw) = (draw(1.0), draw(1.0 + change));
    let (l, u) = order_statistic_ranks(n, 0.99, 0.95);
    let q = |v: &[f64]| QuantileEstimate {
        value: v[rank_index(n, 0.99)],
        low: l.map(|r| v[r - 1]),
        high: u.map(|r| v[r - 1]),
    };
    let p99 = quantile_change(q(&b), q(&nw)).relative;
    let avg = mean_change(MeanEstimate::of(&b), MeanEstimate::of(&nw), 0.95).relative;
    let mut t = Tally {
        pairs: 1,
        ..Tally::default()
    };
    let pi = p99.interval.expect("an interval");
    let ai = avg.interval.expect("an interval");
    t.p99_covered = usize::from(pi.contains(change));
    t.avg_covered = usize::from(ai.contains(change));
    t.gate_failed = usize::from(pi.low > GATE);
    t.unbounded = usize::from(!pi.is_bounded());
    t
}

fn add(a: Tally, b: Tally) -> Tally {
    Tally {
        pairs: a.pairs + b.pairs,
        p99_covered: a.p99_covered + b.p99_covered,
        avg_covered: a.avg_covered + b.avg_covered,
        gate_failed: a.gate_failed + b.gate_failed,
        unbounded: a.unbounded + b.unbounded,
    }
}

fn part_model(args: &Args) {
    let sigma = (1.0 + args.cv * args.cv).ln().sqrt();
    let dist = LogNormal::new(-sigma * sigma / 2.0, sigma).expect("log-normal");
    let started = Instant::now();
    for &n in &args.sizes {
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let rows: Vec<(f64, Tally)> = CHANGES
            .iter()
            .map(|&c| {
                let t = (0..args.model_pairs)
                    .map(|_| model_pair(&mut rng, &dist, n, c))
                    .fold(Tally::default(), add);
                (c, t)
            })
            .collect();
        print_table(
            &format!(
                "Part 1, the statistics alone: {n} requests per run, log-normal CV {}",
                args.cv
            ),
            &rows,
        );
    }
    println!("  ({:.1} s)\n", started.elapsed().as_secs_f64());
}

/// Runs this program as `llmperf` with `args`; its output is discarded. Returns the exit code and stdout.
fn llmperf(args: &[String]) -> (i32, Vec<u8>) {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .arg("--as-llmperf")
        .args(args)
        .output()
        .expect("llmperf runs");
    (out.status.code().unwrap_or(-1), out.stdout)
}

/// One run of the simulator into `dir/name`; panics when it fails.
fn sim_run(args: &Args, dir: &Path, name: &str, ttft_ms: f64, seed: u64) {
    let sim_flags: Vec<String> = vec![
        "--mock-itl-ms".into(),
        "1".into(),
        "--mock-ttft-ms".into(),
        format!("{ttft_ms}"),
        "--mock-jitter-cv".into(),
        format!("{}", args.cv),
        "--seed".into(),
        seed.to_string(),
    ];
    let common: Vec<String> = [
        "--model",
        "m",
        "--prompt",
        "hello",
        "--max-tokens",
        "1",
        "--stream",
        "--no-timestamp",
        "--sleep-interval",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "--seed".into(),
        seed.to_string(),
        "--parallel".into(),
        args.parallel.to_string(),
        "--number".into(),
        args.number.to_string(),
        "--outputs-dir".into(),
        dir.display().to_string(),
        "--name".into(),
        name.into(),
    ])
    .chain(
        (args.repeat > 1)
            .then(|| ["--repeat".to_string(), args.repeat.to_string()])
            .into_iter()
            .flatten(),
    )
    .collect();
    if args.in_process {
        let mut a: Vec<String> = vec!["--api".into(), "mock".into()];
        a.extend(common);
        a.extend(sim_flags);
        let (code, _) = llmperf(&a);
        assert_eq!(code, 0, "llmperf {a:?} failed");
        return;
    }
    let sim = SimProcess::start(&sim_flags);
    let mut a: Vec<String> = vec![
        "--api".into(),
        "openai".into(),
        "--url".into(),
        format!("{}/chat/completions", sim.url),
    ];
    a.extend(common);
    let (code, _) = llmperf(&a);
    drop(sim);
    assert_eq!(code, 0, "llmperf {a:?} failed");
}

/// `llmperf serve-mock` in a process of its own, stopped (stdin closed, then waited for) when dropped.
struct SimProcess {
    child: std::process::Child,
    url: String,
}

impl SimProcess {
    fn start(flags: &[String]) -> SimProcess {
        use std::io::BufRead;
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .args(["--as-llmperf", "serve-mock", "--until-stdin-closes"])
            .args(flags)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("serve-mock starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("serve-mock prints its URL");
        SimProcess {
            child,
            url: line.trim().to_string(),
        }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A relative interval read from compare's JSON (an end it cannot bound as ±∞).
type Interval = Option<(f64, f64)>;

/// `llmperf compare` of two roots: (exit code, the p99_ttft and avg_ttft relative intervals).
fn compare(base: &Path, new: &Path) -> (i32, Interval, Interval) {
    let a: Vec<String> = vec![
        "compare".into(),
        base.display().to_string(),
        new.display().to_string(),
        "--format".into(),
        "json".into(),
        "--fail-on".into(),
        "p99_ttft:+10%".into(),
    ];
    let (code, stdout) = llmperf(&a);
    let v: serde_json::Value = serde_json::from_slice(&stdout).expect("compare's JSON");
    let interval = |name: &str| {
        let m = v["points"][0]["metrics"]
            .as_array()?
            .iter()
            .find(|m| m["metric"] == name)?;
        let i = m["interval"].as_array()?;
        Some((
            i[0].as_f64().unwrap_or(f64::NEG_INFINITY),
            i[1].as_f64().unwrap_or(f64::INFINITY),
        ))
    };
    (code, interval("p99_ttft"), interval("avg_ttft"))
}

fn part_e2e(args: &Args) {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let changes = args.e2e_changes();
    let mut tallies = vec![Tally::default(); changes.len()];
    let started = Instant::now();
    println!(
        "Part 2, end to end: {} pairs per change, {} requests per run{} at --parallel {}, simulator TTFT {} ms × (1 + change), --mock-jitter-cv {}, simulator {}",
        args.pairs,
        args.number,
        if args.repeat > 1 {
            format!(", --repeat {} per side", args.repeat)
        } else {
            String::new()
        },
        args.parallel,
        args.ttft_ms,
        args.cv,
        if args.in_process {
            "in the client's process (--api mock)"
        } else {
            "in its own process (serve-mock)"
        }
    );
    for i in 0..args.pairs {
        let base = tmp.path().join("base");
        sim_run(args, tmp.path(), "base", args.ttft_ms, 1_000_000 + i as u64);
        for (slot, &(k, c)) in changes.iter().enumerate() {
            let seed = 2_000_000 + (k * 100_000 + i) as u64;
            sim_run(args, tmp.path(), "new", args.ttft_ms * (1.0 + c), seed);
            let new = tmp.path().join("new");
            let (code, p99, avg) = compare(&base, &new);
            let t = &mut tallies[slot];
            t.pairs += 1;
            let covers = |i: Interval| i.is_some_and(|(lo, hi)| lo <= c && c <= hi);
            t.p99_covered += usize::from(covers(p99));
            t.avg_covered += usize::from(covers(avg));
            t.gate_failed += usize::from(code == 3);
            t.unbounded +=
                usize::from(p99.is_none_or(|(lo, hi)| !lo.is_finite() || !hi.is_finite()));
            assert!(code == 0 || code == 3, "compare exited {code}");
            std::fs::remove_dir_all(&new).expect("removing a run");
        }
        std::fs::remove_dir_all(&base).expect("removing a run");
        if (i + 1) % 10 == 0 {
            eprintln!(
                "  {} pairs per change in {:.0} s",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let rows: Vec<(f64, Tally)> = changes.iter().map(|(_, c)| *c).zip(tallies).collect();
    print_table(
        "Part 2, end to end (llmperf compare on simulator runs):",
        &rows,
    );
    let runs = args.pairs * (1 + changes.len());
    let wall = started.elapsed().as_secs_f64();
    println!(
        "  {runs} runs and {} comparisons in {wall:.0} s ({:.2} s per run and comparison)",
        args.pairs * changes.len(),
        wall / runs as f64
    );
}

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "--as-llmperf") {
        let mut rest = vec![argv[0].clone()];
        rest.extend(argv[2..].iter().cloned());
        std::process::exit(llmperf::main_with_args(rest));
    }
    let args = Args::parse();
    if !args.e2e_only {
        part_model(&args);
    }
    if !args.model_only {
        part_e2e(&args);
    }
}
