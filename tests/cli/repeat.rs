//! `--repeat K` / `--repeat-new-prompts`: every point run K times, each repeat a complete run root
//! (`<root>/repeat_<k>/`), the repeat summary beside each point, the same (or new) prompts in each repeat,
//! `llmperf compare` taking its intervals from the repeats; and the flags' usage errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;
use crate::tokens::tokenizer_dir;

/// The request bodies' prompts of a run, sorted.
fn prompts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = rows(&dir.join("benchmark_data.db"))
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.request).unwrap();
            body["messages"][0]["content"].as_str().unwrap().to_string()
        })
        .collect();
    v.sort();
    v
}

fn random_run(extra: &str) -> Run {
    Run::new()
        .flags("--api mock --model m --dataset random --min-prompt-length 40 --max-prompt-length 40 --max-tokens 3")
        .flags("--mock-ttft-ms 5 --mock-itl-ms 1 --parallel 2 4 --number 6 6 --no-timestamp")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(extra)
}

#[test]
fn repeats_are_complete_run_roots_with_a_summary_beside_each_point() {
    let run = random_run("--repeat 3");
    run.ok();
    let root = run.root();
    for point in ["parallel_2_number_6", "parallel_4_number_6"] {
        let dirs: Vec<_> = ["", "repeat_2/", "repeat_3/"]
            .iter()
            .map(|r| root.join(format!("{r}{point}")))
            .collect();
        let mut rps = Vec::new();
        for d in &dirs {
            // A complete run folder: arguments, rows, summary, percentiles.
            assert_eq!(
                rows(&d.join("benchmark_data.db")).len(),
                6,
                "{}",
                d.display()
            );
            let s = json_file(&d.join("benchmark_summary.json"));
            assert_eq!(s["Success Requests"], 6);
            rps.push(s["Req Throughput (req/s)"].as_f64().unwrap());
            assert!(d.join("benchmark_percentile.json").is_file());
        }
        // The same prompts in every repeat.
        assert_eq!(prompts(&dirs[0]), prompts(&dirs[1]));
        assert_eq!(prompts(&dirs[0]), prompts(&dirs[2]));
        // The repeat summary: the three runs' values, their mean and the t interval around it.
        let summary = json_file(&root.join(format!("{point}_repeats.json")));
        assert_eq!(summary["repeats"], 3);
        assert_eq!(summary["runs"][1], format!("repeat_2/{point}"));
        let m = &summary["metrics"]["Req Throughput (req/s)"];
        let values: Vec<f64> = m["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(values, rps);
        let mean = rps.iter().sum::<f64>() / 3.0;
        assert!((m["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
        let sd = (rps.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((m["stdev"].as_f64().unwrap() - sd).abs() < 1e-9);
        assert!((m["cv"].as_f64().unwrap() - sd / mean).abs() < 1e-9);
        // t(0.975, 2) = 4.303.
        let half = 4.302_652_729_749_464 * sd / 3f64.sqrt();
        assert!((m["ci95_high"].as_f64().unwrap() - (mean + half)).abs() < 1e-6 * mean);
        assert!(summary["metrics"]["TTFT (ms) 99%"]["mean"].is_number());
    }
    // Two points, not the same prompts.
    assert_ne!(
        prompts(&root.join("parallel_2_number_6")),
        prompts(&root.join("parallel_4_number_6"))
    );
    // Nothing else in the root but the run folders, the repeats, their summaries and the reports.
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "benchmark.log",
            "parallel_2_number_6",
            "parallel_2_number_6_repeats.json",
            "parallel_4_number_6",
            "parallel_4_number_6_repeats.json",
            "perf_report.html",
            "performance_summary.txt",
            "repeat_2",
            "repeat_3"
        ]
    );
}

#[test]
fn new_prompts_read_the_dataset_on_past_the_sweep() {
    let run = random_run("--repeat 2 --repeat-new-prompts");
    run.ok();
    let root = run.root();
    let first = root.join("parallel_2_number_6");
    let second = root.join("repeat_2/parallel_2_number_6");
    let (a, b) = (prompts(&first), prompts(&second));
    assert!(a.iter().all(|p| !b.contains(p)), "new prompts: {a:?} {b:?}");
    // The offsets: the sweep's runs at 0 and 6, the repeats at 12 and 18.
    let offset = |d: &Path| json_file(&d.join("benchmark_args.json"))["dataset_offset"].clone();
    assert_eq!(offset(&first), 0);
    assert_eq!(offset(&root.join("parallel_4_number_6")), 6);
    assert_eq!(offset(&second), 12);
    assert_eq!(offset(&root.join("repeat_2/parallel_4_number_6")), 18);
    let summary = json_file(&root.join("parallel_2_number_6_repeats.json"));
    assert_eq!(summary["new_prompts"], true);
}

#[test]
fn compare_takes_its_intervals_from_the_repeats() {
    let run = |name: &str, ttft: &str| {
        let run = Run::new()
            .flags("--api mock --model m --prompt hello --max-tokens 3 --mock-itl-ms 2 --mock-jitter-cv 0.2")
            .flags("--parallel 5 --number 40 --repeat 3 --no-timestamp")
            .flag("--name", name)
            .flag("--mock-ttft-ms", ttft);
        run.ok();
        run
    };
    let (base, slow) = (run("base", "20"), run("slow", "60"));
    let o = Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .args(["compare", "--format", "json", "--fail-on", "avg_ttft:+500%"])
        .arg(base.root())
        .arg(slow.root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // A mean gated on repeats: no warning that its interval misses drift between runs.
    assert!(!v["warnings"].to_string().contains("misses drift"), "{v}");
    let p = &v["points"][0];
    assert_eq!(
        (p["base_runs"].as_u64(), p["new_runs"].as_u64()),
        (Some(3), Some(3))
    );
    let by_name: BTreeMap<&str, &Value> = p["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["metric"].as_str().unwrap(), m))
        .collect();
    // Every metric, throughputs included, has an interval from the three runs a side.
    for name in ["avg_ttft", "p50_ttft", "rps", "tps"] {
        let m = by_name[name];
        assert_eq!(m["method"], "repeats", "{name}");
        assert!(m["interval"].is_array(), "{name}: {m}");
    }
    // TTFT tripled: a regression even at 2 degrees of freedom a side.
    assert_eq!(by_name["p50_ttft"]["verdict"], "regressed");
}

#[test]
fn repeat_flags_that_cannot_run_are_usage_errors() {
    for (flags, needle) in [
        ("--prompt p --repeat 0", "--repeat 0"),
        (
            "--prompt p --repeat-new-prompts",
            "--repeat-new-prompts needs --repeat",
        ),
        (
            "--prompt p --repeat 2 --repeat-new-prompts",
            "--repeat-new-prompts: --prompt sends one prompt",
        ),
        (
            r#"--prompt p --repeat 2 --sla-auto-tune --sla-params '[{"rps": ">=1"}]'"#,
            "--repeat does not apply to --sla-auto-tune",
        ),
        (
            "--prompt p --parallel 2 --number 4 --repeat 2 --shard 0/2",
            "--repeat runs in one process",
        ),
    ] {
        let run = Run::new().flags("--api mock --model m").flags(flags);
        let err = run.fails(2);
        assert!(err.contains(needle), "{flags}: {err}");
        assert_eq!(run.out_entries(), 0, "{flags}: nothing written");
    }
    // argparse's abbreviation of evalscope's --repetition-penalty still means it.
    let sim = fast_sim();
    let run = Run::against(&sim).flags("--prompt p --number 1 --rep 1.1");
    run.ok();
    let body: Value = serde_json::from_str(&sim.requests().last().unwrap().1).unwrap();
    assert_eq!(body["repetition_penalty"], 1.1);
}
