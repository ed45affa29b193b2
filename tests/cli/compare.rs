//! `llmperf compare BASE NEW`: verdicts on llmperf's runs against the simulator with a known change, the
//! gate's exit code, the renderers (JSON read back, Markdown to --output, JUnit validated against a
//! schema), sweeps matched point by point, evalscope's own run roots, and bad input (exit 2, nothing
//! written).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// `llmperf compare` with `args`.
fn compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .arg("compare")
        .args(args)
        .output()
        .expect("llmperf runs")
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A run of the simulator with TTFT `ttft_ms`, noise 0.2 and `seed`, written under `out` as `name`.
fn sim_run(out: &Run, name: &str, ttft_ms: u32, seed: u32, sweep: &str) -> PathBuf {
    let run = Run::new()
        .sharing_out(out)
        .flags("--api mock --model m --prompt hello --max-tokens 3 --mock-itl-ms 10 --mock-jitter-cv 0.2 --no-timestamp")
        .flags(sweep)
        .flag("--name", name)
        .flag("--mock-ttft-ms", ttft_ms.to_string())
        .flag("--seed", seed.to_string());
    run.ok();
    run.root()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

fn metric<'a>(point: &'a Value, name: &str) -> &'a Value {
    point["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

const SWEEP: &str = "--parallel 20 --number 200";

#[test]
fn a_known_slowdown_regresses_and_fails_its_gate_and_an_a_a_pair_passes() {
    let out = Run::new();
    let base = sim_run(&out, "base", 60, 1, SWEEP);
    let same = sim_run(&out, "same", 60, 2, SWEEP);
    let slow = sim_run(&out, "slow", 120, 3, SWEEP);
    let junit = out.out().join("gate.xml");
    let o = compare(&[
        path(&base),
        path(&slow),
        "--fail-on",
        "p50_ttft:+10%",
        "--fail-on",
        "rps:-5%",
        "--format",
        "json",
        "--junit",
        path(&junit),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("p50_ttft:+10% at parallel 20, number 200"),
        "{}",
        stderr(&o)
    );
    let v = json_out(&o);
    assert_eq!(v["regression"], true);
    let p = &v["points"][0];
    assert_eq!(
        (p["parallel"].as_i64(), p["number"].as_i64()),
        (Some(20), Some(200))
    );
    // TTFT doubled: the change is near +100 % (the client adds a little to both sides), its interval
    // excludes 0, the verdict is a regression.
    for name in ["avg_ttft", "p50_ttft", "p90_ttft"] {
        let m = metric(p, name);
        let change = m["change"].as_f64().unwrap();
        assert!((0.5..1.5).contains(&change), "{name}: {change}");
        assert!(m["interval"][0].as_f64().unwrap() > 0.0, "{name}: {m}");
        assert_eq!(m["verdict"], "regressed", "{name}");
    }
    // 200 rows cannot bound p99 from above: inconclusive, and said why.
    let p99 = metric(p, "p99_ttft");
    assert_eq!(p99["verdict"], "inconclusive");
    assert!(p99["note"].as_str().unwrap().contains("≥ 368"), "{p99}");
    // One run each: a throughput has its change but no interval.
    assert_eq!(metric(p, "rps")["interval"], Value::Null);
    let gates: Vec<(&str, &str)> = p["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["gate"].as_str().unwrap(), g["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        gates,
        [("p50_ttft:+10%", "fail"), ("rps:-5%", "inconclusive")]
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("failures=\"1\"") && xml.contains("skipped=\"1\""),
        "{xml}"
    );

    // A percentile gate on single runs is not warned about; a mean gate is (its interval misses drift
    // between runs), and not with repeats (tests/cli/repeat.rs).
    let drift = |v: &Value| {
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("misses drift between runs"))
    };
    assert!(!drift(&v), "{v}");
    let o = compare(&[
        path(&base),
        path(&slow),
        "--fail-on",
        "avg_ttft:+10%",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let w = json_out(&o);
    assert!(drift(&w), "{w}");

    // The same settings with another seed: nothing to fail.
    let o = compare(&[path(&base), path(&same), "--fail-on", "p50_ttft:+10%"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("Result: no gated regression"));
    // --strict: the inconclusive throughput gate fails.
    let o = compare(&[path(&base), path(&same), "--fail-on", "rps:-5%", "--strict"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// The JUnit report of a failed, a passed and an inconclusive gate validates against the JUnit schema.
#[test]
fn the_junit_report_is_valid_junit_xml() {
    let xmllint = Command::new("xmllint").arg("--version").output();
    if xmllint.is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but xmllint is missing: run scripts/setup_test_deps.sh"
        );
        eprintln!("note: skipping the JUnit schema check: run scripts/setup_xmllint.sh first");
        return;
    }
    let out = Run::new();
    let sweep = "--parallel 5 10 --number 40 40";
    let base = sim_run(&out, "base", 20, 1, sweep);
    let slow = sim_run(&out, "slow", 60, 2, sweep);
    let junit = out.out().join("report.xml");
    let o = compare(&[
        path(&base),
        path(&slow),
        "--fail-on",
        "avg_ttft:+10%",
        "--fail-on",
        "avg_ttft:-50%",
        "--fail-on",
        "tps:-5%",
        "--junit",
        path(&junit),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    // Two points × three gates: two failures, two skipped, two passes.
    assert!(
        xml.contains("tests=\"6\" failures=\"2\" errors=\"0\" skipped=\"2\""),
        "{xml}"
    );
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit.xsd");
    let v = Command::new("xmllint")
        .args(["--noout", "--schema", path(&schema), path(&junit)])
        .output()
        .unwrap();
    assert!(v.status.success(), "{}\n{xml}", stderr(&v));
}

#[test]
fn sweeps_match_point_by_point_and_setup_differences_are_warned() {
    let out = Run::new();
    let base = sim_run(&out, "base", 10, 1, "--parallel 1 2 --number 10 10");
    let new = {
        let run = Run::new()
            .sharing_out(&out)
            .flags("--api mock --model other --max-tokens 5 --mock-ttft-ms 10 --no-timestamp --name new")
            .flags("--dataset line_by_line")
            .input("--dataset-path", "prompts.txt", "hello\nhow are you\n")
            .flags("--parallel 2 4 --number 10 10");
        run.ok();
        run.root()
    };
    // The timestamp level above a root is looked through.
    let o = compare(&[path(&base), path(new.parent().unwrap()), "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "two roots under it: {}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("2 run roots"), "{}", stderr(&o));
    let md = out.out().join("comment.md");
    let o = compare(&[
        path(&base),
        path(&new),
        "--format",
        "markdown",
        "--output",
        path(&md),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "--output takes the text");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("### ✅ llmperf compare"), "{text}");
    assert!(text.contains("#### parallel 2, number 10"), "{text}");
    assert!(
        text.contains("only in BASE: parallel 1, number 10"),
        "{text}"
    );
    assert!(
        text.contains("only in NEW: parallel 4, number 10"),
        "{text}"
    );
    assert!(
        text.contains(r#"model differs: BASE "m" → NEW "other""#),
        "{text}"
    );
    assert!(
        text.contains(r#"max_tokens differs: BASE 3 → NEW 5"#),
        "{text}"
    );
    assert!(text.contains("dataset differs: BASE "), "{text}");
    assert!(text.contains(r#"→ NEW "line_by_line""#), "{text}");
    assert!(text.contains("dataset_path differs: BASE "), "{text}");
    // A single run folder against a root: the one point matches.
    let o = compare(&[
        path(&base.join("parallel_2_number_10")),
        path(&new),
        "--format",
        "json",
    ]);
    let v = json_out(&o);
    assert_eq!(v["points"].as_array().unwrap().len(), 1);
    assert_eq!(v["only_new"][0]["parallel"], 4);
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let out = Run::new();
    let base = sim_run(&out, "base", 5, 1, "--parallel 1 --number 5");
    let other = sim_run(&out, "other", 5, 1, "--parallel 2 --number 5");
    let empty = out.out().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let written = out.out().join("written.txt");
    let junit = out.out().join("written.xml");
    let (b, e, o) = (path(&base), path(&empty), path(&other));
    for (args, needle) in [
        (
            vec![b, "/nonexistent/run"],
            "NEW /nonexistent/run: not a run root or run folder: no such folder",
        ),
        (vec![e, b], "BASE"),
        (
            vec![b, b, "--fail-on", "p98_ttft:+10%"],
            "--fail-on 'p98_ttft:+10%': unknown metric 'p98_ttft'",
        ),
        (
            vec![b, b, "--fail-on", "p99_ttft:+10"],
            "malformed threshold",
        ),
        (vec![b, b, "--fail-on", "p99_ttft:10%"], "needs a sign"),
        (vec![b, o], "no point of BASE matches a point of NEW"),
        (vec![b, b, "--format", "yaml"], "--format"),
    ] {
        let mut args = args.clone();
        args.extend(["--output", path(&written), "--junit", path(&junit)]);
        let r = compare(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(needle), "{args:?}: {}", stderr(&r));
        assert!(
            !written.exists() && !junit.exists(),
            "{args:?}: nothing written"
        );
    }
}

/// The verdicts of every metric at every point, as (point, metric, verdict).
fn verdicts(base: &Path, new: &Path) -> Vec<(String, String, String)> {
    let o = compare(&[path(base), path(new), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    let mut out = Vec::new();
    for p in v["points"].as_array().unwrap() {
        for m in p["metrics"].as_array().unwrap() {
            out.push((
                format!("{} {}", p["parallel"], p["number"]),
                m["metric"].as_str().unwrap().to_string(),
                m["verdict"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// Run roots written by evalscope perf 1.14.1 itself (tests/fixtures/evalscope-compare: the same
/// simulator settings, the second server twice as slow) get the verdicts llmperf's own runs of those
/// settings get.
#[test]
fn evalscope_run_roots_get_the_verdicts_of_llmperfs_runs() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/evalscope-compare");
    let theirs = verdicts(&fixtures.join("base"), &fixtures.join("new"));
    let out = Run::new();
    let run = |name: &str, ttft: &str, itl: &str, seed: &str| {
        let run = Run::new()
            .sharing_out(&out)
            .flags("--api mock --model m --prompt hello --max-tokens 4 --parallel 4 8 --number 50 50 --stream")
            .flags("--mock-jitter-cv 0.2 --no-timestamp")
            .flag("--name", name)
            .flag("--mock-ttft-ms", ttft)
            .flag("--mock-itl-ms", itl)
            .flag("--seed", seed);
        run.ok();
        run.root()
    };
    let ours = verdicts(&run("base", "60", "20", "1"), &run("new", "120", "40", "2"));
    assert_eq!(ours, theirs);
    // And they are the expected ones: every latency regressed but p99 (50 rows bound no p99), the
    // throughputs inconclusive with one run each.
    for (_, metric, verdict) in &theirs {
        let expected = if metric.starts_with("p99_") || metric == "rps" || metric == "tps" {
            "inconclusive"
        } else {
            "regressed"
        };
        assert_eq!(verdict, expected, "{metric}");
    }
    assert_eq!(theirs.len(), 2 * 18);
}

#[test]
fn completions_and_the_man_page_know_compare_and_its_flags() {
    let llmperf = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_llmperf"))
            .args(args)
            .output()
            .expect("llmperf runs");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let bash = llmperf(&["completions", "bash"]);
    for word in ["compare", "--fail-on", "--junit", "--strict", "markdown"] {
        assert!(
            bash.contains(word),
            "{word} missing from the bash completion"
        );
    }
    let zsh = llmperf(&["completions", "zsh"]);
    assert!(zsh.contains("compare") && zsh.contains("--fail-on"), "zsh");
    let page = llmperf(&["man"]);
    assert!(
        page.contains("compare"),
        "compare missing from the man page"
    );
}

#[test]
fn runs_measured_in_different_cache_protocols_are_warned() {
    let out = Run::new();
    let base = sim_run(&out, "base", 10, 1, "--parallel 1 --number 10");
    let new = sim_run(
        &out,
        "new",
        10,
        1,
        "--parallel 1 --number 10 --mock-prefix-cache on --reset-prefix-cache each-run",
    );
    let o = compare(&[path(&base), path(&new), "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(r#"reset_prefix_cache differs: BASE (none) → NEW "each-run""#),
        "{text}"
    );
}
