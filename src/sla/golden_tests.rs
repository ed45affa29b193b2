//! The SLA search and its report against real evalscope 1.14.1 runs (`tests/fixtures/evalscope-golden/
//! sla_*`): the golden's recorded run results (each run folder's summary file and
//! the percentile file) are fed to llmperf's search in place of live runs, so timings are the
//! golden's; llmperf must then probe the same values in the same order, write the same
//! `sla_summary.json` byte for byte, log the same SLA lines (and the same `SLA Auto-tune Summary` tables)
//! and render the same end-of-sweep text report.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;

use super::probe::RunOutcome;
use super::report;
use super::tuner::{ProbeRunner, Tuner};
use crate::export::report::{performance_summary, ReportInfo};
use crate::metrics::PercentileTable;
use crate::plan::sla::SlaPlan;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/evalscope-golden")
        .join(case)
}

/// Splits a shell command line (single quotes and spaces are all the goldens use).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

/// A percentile file (a list of row objects, bare `NaN`s) as a table.
fn percentile_table(text: &str) -> PercentileTable {
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&text.replace("NaN", "null")).expect("percentile JSON");
    let mut columns: Vec<(String, [f64; 11])> = Vec::new();
    for key in rows[0].keys().filter(|k| *k != "Percentiles") {
        let mut values = [f64::NAN; 11];
        for (i, row) in rows.iter().enumerate() {
            values[i] = row[key].as_f64().unwrap_or(f64::NAN);
        }
        columns.push((key.clone(), values));
    }
    PercentileTable { columns }
}

/// Replays the golden's run folders.
struct Replay {
    root: PathBuf,
    var: &'static str,
}

impl ProbeRunner for Replay {
    async fn run(&mut self, value: i64, iteration: usize) -> Result<RunOutcome> {
        let dir = self.root.join(format!(
            "sla_tuning/sla_{}_{value}_run_{iteration}",
            self.var
        ));
        let summary = std::fs::read_to_string(dir.join("benchmark_summary.json"))
            .with_context(|| format!("the golden never ran {}", dir.display()))?;
        let pct = std::fs::read_to_string(dir.join("benchmark_percentile.json"))?;
        Ok(RunOutcome::from_summary_json(
            &summary,
            percentile_table(&pct),
        ))
    }

    async fn pause(&mut self) {}
}

/// The golden's log messages (ANSI and the logger prefix removed; continuation lines kept).
fn golden_messages(console: &str) -> Vec<String> {
    let plain = strip_ansi(console);
    let mut out: Vec<String> = Vec::new();
    for line in plain.lines() {
        let is_log =
            line.len() > 22 && line.as_bytes()[4] == b'-' && line.contains(" - evalscope - ");
        if is_log {
            let msg = line.split_once(": ").map_or("", |(_, m)| m);
            out.push(msg.to_string());
        } else if let Some(last) = out.last_mut() {
            last.push('\n');
            last.push_str(line);
        }
    }
    out
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a log message is one the SLA search itself prints.
fn is_sla_message(msg: &str, var: &str) -> bool {
    let prefixes = [
        "Starting SLA Auto-tune",
        "SLA Range:",
        "SLA Params:",
        "Auto-tuning for criteria group:",
        "Initial run ",
        "Testing upper bound:",
        "Testing lower bound:",
        "Found ",
        "Reached upper bound limit",
        "Binary search",
        "SLA Auto-tune finished.",
        "Even ",
        "Optimization mode:",
        "Sleeping 0 seconds before next run",
        "SLA Auto-tune Summary:",
    ];
    prefixes.iter().any(|p| msg.starts_with(p))
        || msg.starts_with(&format!("Running {var}="))
        || msg.starts_with(&format!("[{var}="))
}

fn check_case(case: &str) {
    let dir = fixture(case);
    let command = std::fs::read_to_string(dir.join("command.txt")).unwrap();
    let first = command.lines().next().unwrap();
    let line = first
        .trim_start_matches("evalscope perf")
        .replace("PORT", "8000");
    let mut argv = shell_words(&line);
    argv.insert(0, "llmperf".into());
    let cli = crate::cli::Cli::try_parse_from(&argv).unwrap();
    let plan = crate::plan::RunPlan::from_cli(cli, chrono::Local::now()).unwrap();
    let sla: SlaPlan = plan.sla.clone().expect("an SLA command");
    let root = dir.join(format!("outputs/{case}"));
    let var = sla.variable.name();
    let replay = Replay {
        root: root.clone(),
        var,
    };
    let mut tuner = Tuner::new(&sla, replay);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(tuner.tune()).unwrap();

    let golden_json = std::fs::read_to_string(root.join("sla_summary.json")).unwrap();
    let ours = report::summary_json(&sla, &tuner.probes, &tuner.selections);
    assert_eq!(ours, golden_json, "{case}: sla_summary.json differs");

    tuner.info(format!(
        "SLA Auto-tune Summary:\n{}",
        report::tables(&tuner.probes, &tuner.selections)
    ));
    let console = std::fs::read_to_string(dir.join("console.txt")).unwrap();
    let golden: Vec<String> = golden_messages(&console)
        .into_iter()
        .filter(|m| is_sla_message(m, var))
        .collect();
    let ours: Vec<String> = tuner
        .transcript
        .iter()
        .filter(|m| is_sla_message(m, var))
        .cloned()
        .collect();
    assert!(
        golden.len() > 10,
        "{case}: too few SLA lines found in the golden"
    );
    for (i, (a, b)) in ours.iter().zip(&golden).enumerate() {
        assert_eq!(a, b, "{case}: SLA log line {i} differs");
    }
    assert_eq!(ours.len(), golden.len(), "{case}: number of SLA log lines");

    let endpoint = first
        .split("--url http://")
        .nth(1)
        .and_then(|u| u.split('/').next())
        .unwrap()
        .to_string();
    let golden_report = std::fs::read_to_string(root.join("performance_summary.txt")).unwrap();
    let port = golden_report
        .lines()
        .find(|l| l.contains("│ Endpoint"))
        .and_then(|l| l.split("127.0.0.1:").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap();
    let info = ReportInfo {
        model: "mock-model".into(),
        dataset: "openqa".into(),
        api: "openai".into(),
        alias: None,
        endpoint: endpoint.replace("PORT", port),
        output_path: format!("outputs/{case}"),
        input_only: false,
    };
    let text = performance_summary(&info, &report::report_runs(&tuner.probes));
    assert_eq!(
        text, golden_report,
        "{case}: performance_summary.txt differs"
    );
}

#[test]
fn parallel_search_matches_evalscope() {
    check_case("sla_parallel");
}

#[test]
fn rate_search_matches_evalscope() {
    check_case("sla_rate");
}

#[test]
fn optimisation_walk_matches_evalscope() {
    check_case("sla_max");
}
