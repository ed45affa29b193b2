//! `--dry-run [N]`: nothing sent (the simulator receives no request, not even the connection test), no
//! run folder, the bodies as JSON lines equal to what a real run with the same seed sends, a summary.

use std::collections::BTreeMap;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::Value;

use super::column;
use crate::common::Run;

fn sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft: std::time::Duration::ZERO,
        itl: std::time::Duration::ZERO,
        ..SimConfig::default()
    })
    .unwrap()
}

/// Six distinct prompts, one a line.
fn prompts() -> String {
    (0..6)
        .map(|i| format!("prompt {i} says {}\n", "word ".repeat(i)))
        .collect()
}

#[test]
fn a_dry_run_sends_nothing_writes_no_folder_and_its_bodies_are_the_real_ones() {
    let sim = sim();
    let flags =
        "--dataset line_by_line --max-tokens 4 9 --seed 11 --number 6 --lora-modules a=3 b=1";
    let dry = Run::against(&sim)
        .flags(flags)
        .input("--dataset-path", "p.txt", prompts())
        .flags("--dry-run 6");
    let out = dry.output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sim.requests().len(), 0, "nothing sent, no connection test");
    assert_eq!(dry.out_entries(), 0, "no run folder");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("Dry run"), "{summary}");
    assert!(summary.contains("parallel_1_number_6"), "{summary}");
    assert!(
        summary.contains("prompt words: min 3, mean 5.5, max 8"),
        "{summary}"
    );
    assert!(
        summary.contains("Models (weighted): a 75.0%, b 25.0%"),
        "{summary}"
    );
    let bodies: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(bodies.len(), 6);

    // The real run with the same flags sends the same bodies, in the same order (one at a time).
    let real = Run::against(&sim)
        .flags(flags)
        .input("--dataset-path", "p.txt", prompts())
        .ok_dir("parallel_1_number_6");
    let sent: Vec<Value> = column(&real.db(), "request")
        .into_iter()
        .map(|b| serde_json::from_str(&b.unwrap()).unwrap())
        .collect();
    assert_eq!(sent, bodies);
    let max_tokens: Vec<&Value> = bodies.iter().map(|b| &b["max_tokens"]).collect();
    assert!(
        max_tokens.iter().any(|m| *m != max_tokens[0]),
        "drawn: {max_tokens:?}"
    );
}

#[test]
fn a_dry_run_file_gets_the_bodies_and_stdout_the_summary_with_the_schedule() {
    let run = Run::new();
    let file = run.file("bodies.jsonl", "");
    let run = run
        .flags(
            "--api mock --model m --prompt 'hello there' --number 12 --rate 4 --open-loop --seed 5",
        )
        .flag("--dry-run-file", &file)
        .flags("--dry-run");
    let stdout = run.ok();
    assert_eq!(run.out_entries(), 0, "no run folder");
    assert!(
        stdout.contains("arrivals (s after the start): "),
        "{stdout}"
    );
    assert!(stdout.contains("10 arrivals over"), "{stdout}");
    assert!(stdout.contains("models: m ×10"), "{stdout}");
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10, "the default N");
    let mut prompts = BTreeMap::new();
    for l in &lines {
        *prompts
            .entry(l["messages"][0]["content"].to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(prompts.len(), 1, "{prompts:?}");
}
