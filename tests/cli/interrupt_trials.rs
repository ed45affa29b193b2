//! SIGINT/SIGTERM at random moments of a small sweep (24 seeded trials): whatever the moment — before the
//! output exists, during a connection test, a run, the sleep between runs or the final report — the exit
//! code is 128 + signal, every database is a valid SQLite file holding exactly the requests the simulator
//! served, every run folder is complete (summary marked `Interrupted` exactly when the run was cut short),
//! and earlier runs are intact. A second signal exits at once with the database still valid.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::common::*;
use llmperf::sim::{Fault, FaultRule, SimConfig, SimServer};

const NUMBER: usize = 50;
const PROMPT: &str = "interrupt me";
const RUNS: [&str; 2] = ["parallel_1_number_50", "parallel_2_number_50"];

fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("llmperf did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts a run of `extra` against `sim` (no timestamp folder) and returns it with its process.
fn spawn(sim: &SimServer, extra: &str) -> (Run, Child) {
    let run = Run::at(sim, "/v1/chat/completions")
        .flag("--prompt", PROMPT)
        .flags("--max-tokens 4 --no-timestamp")
        .flags(extra);
    let child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (run, child)
}

fn integrity_ok(db: &Path) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok", "{}", db.display());
    conn.query_row("SELECT count(*) FROM result", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize
}

/// One trial: signal (twice when `double`) after `delay`; returns a one-word description of the outcome.
fn trial(delay: Duration, sig: i32, double: Option<Duration>) -> &'static str {
    let sim = timed_sim(1, 1);
    let (run, mut child) = spawn(
        &sim,
        "--parallel 1 2 --number 50 50 --sleep-interval 1 --db-commit-interval 7",
    );
    std::thread::sleep(delay);
    signal(&child, sig);
    if let Some(gap) = double {
        std::thread::sleep(gap);
        signal(&child, sig);
    }
    let status = wait(&mut child, Duration::from_secs(30));
    let ctx = format!("delay {delay:?}, signal {sig}, double {double:?}, status {status:?}");
    let root = run.root();

    if status.signal().is_some() {
        // Only possible before the handlers were installed, i.e. before anything was written.
        assert_eq!(status.signal(), Some(sig), "{ctx}");
        assert!(
            !root.exists(),
            "{ctx}: killed by the signal after writing output"
        );
        return "killed-before-start";
    }
    let code = status.code().unwrap();
    let served = sim
        .requests()
        .iter()
        .filter(|(_, body, _)| body.contains(PROMPT))
        .count();
    let mut stored = 0;
    let mut marked = 0;
    let mut dirs = 0;
    for (i, name) in RUNS.iter().enumerate() {
        let run = root.join(name);
        if !run.exists() {
            continue;
        }
        dirs += 1;
        assert!(run.join("benchmark_args.json").is_file(), "{ctx}: {name}");
        let db = run.join("benchmark_data.db");
        let summary = run.join("benchmark_summary.json");
        if double.is_none() {
            for f in [
                "benchmark_data.db",
                "benchmark_summary.json",
                "benchmark_percentile.json",
            ] {
                assert!(run.join(f).is_file(), "{ctx}: {name}/{f} missing");
            }
        }
        let rows = if db.is_file() { integrity_ok(&db) } else { 0 };
        stored += rows;
        if summary.is_file() {
            let s = json_file(&summary);
            assert_eq!(
                s["Total Requests"].as_u64(),
                Some(rows as u64),
                "{ctx}: {name}"
            );
            if s["Interrupted"] == true {
                marked += 1;
                assert!(rows < NUMBER, "{ctx}: {name} marked but complete");
            } else {
                assert_eq!(rows, NUMBER, "{ctx}: {name} incomplete but not marked");
            }
        }
        if i == 1 {
            // The earlier run is intact.
            let first = root.join(RUNS[0]);
            assert_eq!(
                integrity_ok(&first.join("benchmark_data.db")),
                NUMBER,
                "{ctx}"
            );
            let s = json_file(&first.join("benchmark_summary.json"));
            assert!(s.get("Interrupted").is_none(), "{ctx}");
        }
    }
    if double.is_none() {
        assert_eq!(
            stored, served,
            "{ctx}: every request served is stored, and only those"
        );
        assert_eq!(
            root.join("performance_summary.txt").is_file(),
            dirs > 0,
            "{ctx}: the report covers the runs that started"
        );
    } else {
        assert!(stored <= served, "{ctx}");
    }
    match code {
        0 => {
            assert_eq!(
                (dirs, stored, marked),
                (2, 2 * NUMBER, 0),
                "{ctx}: exit 0 but incomplete"
            );
            "finished-first"
        }
        c if c == 128 + sig => match (dirs, marked) {
            (0, _) => "during-start-up",
            (_, 0) => "between-runs-or-after",
            _ => "mid-run",
        },
        c => panic!("{ctx}: exit code {c}"),
    }
}

#[test]
fn signals_at_random_moments_of_a_sweep() {
    let seed: u64 = std::env::var("LLMPERF_TRIAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let trials: Vec<(Duration, i32, Option<Duration>)> = (0..24)
        .map(|i| {
            // A third of the trials aim at start-up (handlers, output root, first connection test).
            let max_ms = if i % 3 == 0 { 150 } else { 1800 };
            let delay = Duration::from_millis(rng.random_range(0..max_ms));
            let sig = if i % 2 == 0 {
                libc::SIGINT
            } else {
                libc::SIGTERM
            };
            let double = (i % 4 == 3).then(|| Duration::from_millis(rng.random_range(0..60)));
            (delay, sig, double)
        })
        .collect();
    // Three at a time, each with its own simulator and folder.
    let outcomes: Vec<&str> = std::thread::scope(|s| {
        let handles: Vec<_> = trials
            .chunks(8)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&(d, sig, dbl)| trial(d, sig, dbl))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(outcomes.len(), 24);
    eprintln!("seed {seed}: {outcomes:?}");
}

/// While requests hang, the first signal waits for the grace period; a second one exits at once, after
/// committing every finished request.
#[test]
fn second_signal_exits_at_once_with_every_finished_request_committed() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        faults: vec![FaultRule {
            fault: Fault::Hang,
            every: 3,
        }],
        ..SimConfig::default()
    })
    .unwrap();
    let (run, mut child) = spawn(
        &sim,
        "--parallel 4 --number 1000 --no-test-connection --db-commit-interval 1000000",
    );
    // Requests 3, 6, 9 and 12 hang and hold all four slots; the other eight finish.
    let t0 = Instant::now();
    while sim.requests().len() < 12 || sim.truth().len() < 8 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no traffic");
        std::thread::sleep(Duration::from_millis(10));
    }
    let first = Instant::now();
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let status = wait(&mut child, Duration::from_secs(30));
    let took = first.elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(
        took < llmperf::shutdown::GRACE - Duration::from_millis(500),
        "the second signal did not cut the {:?} grace period short: {took:?}",
        llmperf::shutdown::GRACE
    );
    let db = run.run_dir("parallel_4_number_1000").db();
    assert_eq!(
        integrity_ok(&db),
        sim.truth().len(),
        "every finished request committed"
    );
}
