//! Unit tests of shard resolution, the plan split and the clock helpers.

use clap::Parser;
use std::collections::HashMap;

use super::*;
use crate::cli::Cli;
use crate::plan::sharding::*;
use crate::plan::{LoadMode, RunPlan};

fn plan(args: &[&str]) -> Result<RunPlan, String> {
    let mut v = vec!["llmperf", "--model", "m", "--prompt", "p"];
    v.extend_from_slice(args);
    RunPlan::from_cli(Cli::try_parse_from(v).unwrap(), chrono::Local::now()).map_err(|e| e.0)
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn resolve_with(args: &[&str], env: &[(&str, &str)]) -> Result<Option<Sharding>, String> {
    let p = plan(&[])?;
    let cli = Cli::try_parse_from(["llmperf"].iter().chain(args)).unwrap();
    let mut p = p;
    p.runs[0].load = crate::plan::Load::Closed {
        parallel: std::num::NonZeroUsize::new(8).unwrap(),
        pacing: None,
    };
    p.runs[0].number = 100;
    resolve(&p, &cli.sharding, &env_of(env)).map_err(|e| e.0)
}

#[test]
fn slots_give_the_remainder_to_the_first_shards() {
    let shares: Vec<u64> = (0..4).map(|k| slots(10, k, 4)).collect();
    assert_eq!(shares, vec![3, 3, 2, 2]);
    assert_eq!(shares.iter().sum::<u64>(), 10);
    assert_eq!(slots(4, 3, 4), 1);
}

#[test]
fn auto_reads_slurm_and_kubernetes() {
    let s = resolve_with(
        &["--shard", "auto"],
        &[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!((s.index, s.count, s.source), (1, 4, "slurm"));
    let k = resolve_with(
        &["--shard", "auto"],
        &[("JOB_COMPLETION_INDEX", "2"), ("LLMPERF_SHARDS", "3")],
    )
    .unwrap()
    .unwrap();
    assert_eq!((k.index, k.count, k.source), (2, 3, "kubernetes"));
    let flag = resolve_with(
        &["--shard", "auto", "--shard-count", "5"],
        &[("JOB_COMPLETION_INDEX", "4"), ("LLMPERF_SHARDS", "3")],
    )
    .unwrap()
    .unwrap();
    assert_eq!(flag.count, 5, "the flag wins over $LLMPERF_SHARDS");
}

#[test]
fn auto_without_a_scheduler_says_why() {
    let e = resolve_with(&["--shard", "auto"], &[]).unwrap_err();
    assert!(
        e.contains("SLURM_ARRAY_TASK_ID") && e.contains("JOB_COMPLETION_INDEX"),
        "{e}"
    );
    let e = resolve_with(&["--shard", "auto"], &[("JOB_COMPLETION_INDEX", "1")]).unwrap_err();
    assert!(
        e.contains("--shard-count") && e.contains("LLMPERF_SHARDS"),
        "{e}"
    );
    let e = resolve_with(
        &["--shard", "auto"],
        &[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ],
    )
    .unwrap_err();
    assert!(e.contains("not below the shard count"), "{e}");
    let e = resolve_with(&["--shard-count", "4"], &[]).unwrap_err();
    assert!(e.contains("--shard auto"), "{e}");
}

#[test]
fn zero_slots_and_empty_shards_are_usage_errors() {
    let e = plan(&["--parallel", "2", "--number", "10", "--shard", "2/4"]).unwrap_err();
    assert!(e.contains("--parallel 2") && e.contains("0 slots"), "{e}");
    let e = plan(&["--parallel", "4", "--number", "3", "--shard", "0/4"]).unwrap_err();
    assert!(e.contains("--number 3"), "{e}");
    // Open loop has no slots to split.
    plan(&[
        "--open-loop",
        "--rate",
        "5",
        "--number",
        "8",
        "--shard",
        "3/4",
    ])
    .unwrap();
}

#[test]
fn every_shard_has_the_same_fingerprint_and_seed_and_its_own_root() {
    let a = plan(&[
        "--parallel",
        "4",
        "--number",
        "8",
        "--shard",
        "0/4",
        "--outputs-dir",
        "x",
    ])
    .unwrap();
    let b = plan(&[
        "--parallel",
        "4",
        "--number",
        "8",
        "--shard",
        "3/4",
        "--outputs-dir",
        "y",
    ])
    .unwrap();
    let other = plan(&["--parallel", "4", "--number", "9", "--shard", "1/4"]).unwrap();
    let (sa, sb) = (a.sharding.as_ref().unwrap(), b.sharding.as_ref().unwrap());
    assert_eq!(sa.fingerprint, sb.fingerprint);
    assert_eq!(sa.seed, sb.seed);
    assert_ne!(sa.fingerprint, other.sharding.unwrap().fingerprint);
    let root = |p: &crate::plan::RunPlan| crate::run_folder::RunRoot::of(p).path().to_path_buf();
    assert!(root(&a).ends_with("m_shard0of4"), "{}", root(&a).display());
    assert!(root(&b).ends_with("m_shard3of4"));
    let alone = plan(&["--start-at", "2026-12-01T10:00:00Z"]).unwrap();
    assert_eq!(alone.sharding.as_ref().map(|s| s.count), Some(1));
    assert!(root(&alone).ends_with("m"));
}

#[test]
fn the_split_is_a_partition_of_the_plan() {
    for mode in [LoadMode::Closed, LoadMode::Open] {
        let p = match mode {
            LoadMode::Closed => plan(&["--parallel", "5", "--number", "11", "--warmup-num", "2"]),
            LoadMode::Open => plan(&[
                "--open-loop",
                "--rate",
                "50",
                "--number",
                "11",
                "--warmup-num",
                "2",
            ]),
        }
        .unwrap();
        let spec = &p.runs[0];
        let mut seen = Vec::new();
        let mut slots_total = 0;
        for k in 0..3 {
            let s = Sharding {
                index: k,
                count: 3,
                source: "flag",
                start_at: None,
                fingerprint: String::new(),
                seed: 0,
            };
            let w = split(Some(&s), spec, 13, 5);
            assert!((0..2).all(|i| w.pick.keeps(i)), "every shard warms up");
            let kept: Vec<usize> = (2..13).filter(|&i| w.pick.keeps(i)).collect();
            assert!(kept.iter().all(|b| (b - 2) % 3 == k as usize));
            assert_eq!(w.measured as usize, kept.len());
            assert_eq!(w.pick.kept(), kept.len() + 2);
            if mode == LoadMode::Closed {
                slots_total += w.slots.expect("closed loop has slots");
            } else {
                assert_eq!(w.slots, None);
            }
            seen.extend(kept);
        }
        seen.sort_unstable();
        assert_eq!(seen, (2..13).collect::<Vec<_>>(), "every request once");
        if mode == LoadMode::Closed {
            assert_eq!(slots_total, 5);
        }
        let alone = split(None, spec, 13, 5);
        assert_eq!((alone.measured, alone.pick.kept()), (11, 13));
    }
    // More shards than measured requests: the last ones send only the warmup.
    let p = plan(&["--number", "2"]).unwrap();
    let s = |index| Sharding {
        index,
        count: 4,
        source: "flag",
        start_at: None,
        fingerprint: String::new(),
        seed: 0,
    };
    let measured: Vec<u64> = (0..4)
        .map(|k| split(Some(&s(k)), &p.runs[0], 2, 4).measured)
        .collect();
    assert_eq!(measured, vec![1, 1, 0, 0]);
}

#[test]
fn chronyc_and_clock_helpers() {
    let text = "Reference ID    : A9FEA97B (169.254.169.123)\nSystem time     : 0.000012345 seconds slow of NTP time\nLast offset     : +0.000001 seconds\n";
    assert_eq!(clock::parse_chronyc(text), Some(-0.000012345));
    assert_eq!(
        clock::parse_chronyc("System time     : 0.5 seconds fast of NTP time"),
        Some(0.5)
    );
    assert_eq!(clock::parse_chronyc("nothing"), None);
    crate::clock::init();
    let wall_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    // Bracketed by two wall-clock reads, so a pause anywhere in between (a busy machine) cannot fail it.
    let offset = clock::wall_minus_monotonic_s();
    let before = wall_now();
    let now = crate::clock::now_s() + offset;
    let after = wall_now();
    assert!(
        (before - 0.001..=after + 0.001).contains(&now),
        "{before} ≤ {now} ≤ {after}"
    );
    // A minute ahead: however long this thread waits, the instant is still in the future.
    let t0 = std::time::Instant::now();
    let soon = chrono::Utc::now() + chrono::Duration::seconds(60);
    let (at, late) = clock::instant_of(soon);
    let t1 = std::time::Instant::now();
    assert_eq!(late, 0.0);
    let (lo, hi) = (
        t0 + std::time::Duration::from_millis(59_990),
        t1 + std::time::Duration::from_millis(60_010),
    );
    assert!(lo <= at && at <= hi, "{at:?} not in [{lo:?}, {hi:?}]");
    let info = clock::StartInfo::at(at, Some(soon));
    assert!(info.late_s < 0.01, "{}", info.late_s);
    assert!(info.started_at_rfc3339().ends_with('Z'));
}
