//! The sharded run through a real single-node Slurm cluster (scripts/slurm_local.sh): examples/slurm_submit.sh
//! submits `sbatch --array=0-3` of examples/slurm_shards.sbatch against `llmperf serve-mock`, and the merge as a
//! job that depends on the array (`afterok`); the merged result must equal one local process on the same plan.
//! Skipped with a note where Slurm cannot be installed or started, except under `CI=true`, where it fails.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{json_file, llmperf, ok, serve_mock};
use crate::shards::{
    assert_merged_root, assert_percentiles_within_noise, assert_same_result, find_dir, plan_args,
    prompts,
};

/// How long the array and the merge may take on a loaded machine.
const JOBS_TIMEOUT: Duration = Duration::from_secs(240);

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm_local.sh")
}

/// Stops the daemons when the test ends (also when it fails).
struct Cluster {
    conf: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").status();
    }
}

fn cluster() -> Option<Cluster> {
    let out = Command::new(script())
        .arg("start")
        .output()
        .expect("run slurm_local.sh");
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and no Slurm cluster could be started: {why}"
        );
        eprintln!(
            "note: skipping the Slurm test: no single-node Slurm could be started here ({why})"
        );
        return None;
    }
    let env = Command::new(script()).arg("env").output().unwrap();
    let line = String::from_utf8_lossy(&env.stdout).into_owned();
    let conf = line
        .trim()
        .trim_start_matches("export SLURM_CONF=")
        .to_string();
    Some(Cluster { conf })
}

fn queued(conf: &str, jobs: &[&str]) -> bool {
    let out = Command::new("squeue")
        .env("SLURM_CONF", conf)
        .args(["-h", "-j", &jobs.join(",")])
        .output()
        .unwrap();
    !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

#[test]
fn slurm_array_shards_and_a_dependent_merge_equal_one_process() {
    let Some(cluster) = cluster() else {
        return;
    };
    let (mut sim, base) = serve_mock(&[
        "--mock-ttft-ms",
        "30",
        "--mock-itl-ms",
        "5",
        "--mock-threads",
        "2",
    ]);
    let url = format!("{base}/chat/completions");
    let tmp = tempfile::tempdir().unwrap();
    let data = prompts(tmp.path(), 40);
    let data = data.to_str().unwrap();
    let args = plan_args(&url, data, &["--number", "40", "--parallel", "4"]);
    let single_out = tmp.path().join("single");
    ok(&llmperf(&single_out, &args));

    let out = tmp.path().join("slurm");
    let submit =
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/slurm_submit.sh"))
            .arg("4")
            .arg(&out)
            .args(&args)
            .args(["--sleep-interval", "0"])
            .env("SLURM_CONF", &cluster.conf)
            .env("LLMPERF", env!("CARGO_BIN_EXE_llmperf"))
            .env("LLMPERF_START_DELAY_S", "5")
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap();
    let said = ok(&submit);
    let field = |k: &str| {
        said.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("{k} in {said}"))
            .to_string()
    };
    let (array, merge) = (field("array_job="), field("merge_job="));
    let started = Instant::now();
    while queued(&cluster.conf, &[&array, &merge]) {
        assert!(
            started.elapsed() < JOBS_TIMEOUT,
            "the Slurm jobs did not finish in {JOBS_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let merged_root = out.join("merged").join("m");
    let logs: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".out"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        merged_root.is_dir(),
        "no merged root; job logs:\n{}",
        logs.join("\n---\n")
    );
    for k in 0..4 {
        let run = out.join(format!("shards/m_shard{k}of4/parallel_4_number_40"));
        let rec = &json_file(&run.join("benchmark_args.json"))["llmperf_shard"];
        assert_eq!(rec["source"], "slurm");
        assert_eq!(rec["index"], k);
    }
    let single = find_dir(&single_out, "parallel_4_number_40");
    let merged = merged_root.join("parallel_4_number_40");
    assert_same_result(&single, &merged);
    assert_percentiles_within_noise(&single, &merged, || {
        let again = tmp.path().join("single_again");
        ok(&llmperf(&again, &args));
        find_dir(&again, "parallel_4_number_40")
    });
    assert_merged_root(&merged_root, "parallel_4_number_40");
    let args = json_file(&merged_root.join("parallel_4_number_40/benchmark_args.json"));
    let skew = args["llmperf_merge"]["start_skew_s"].as_f64().unwrap();
    eprintln!("slurm shards: start skew {:.3} ms", skew * 1e3);
    drop(sim.stdin.take());
    let _ = sim.wait();
}
