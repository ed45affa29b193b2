//! Bad input, table-driven: every invalid flag, value and combination gets a one-line error that names the
//! flag and says what to do, exit 2 for usage errors (nothing written) and exit 1 for runtime errors.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::stderr;

/// Runs `llmperf` with exactly `args` (no `--outputs-dir` added).
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .env("HF_HUB_OFFLINE", "1")
        .env("MODELSCOPE_ENDPOINT", "http://127.0.0.1:9")
        .env("MODELSCOPE_CACHE", "/nonexistent/modelscope")
        .env("HF_HUB_CACHE", "/nonexistent/huggingface")
        .args(args)
        .output()
        .expect("llmperf runs")
}

/// Asserts the exit code and that the first line of stderr is the error, naming `flag` and holding `hint`.
fn assert_error(o: &Output, code: i32, flag: &str, hint: &str, case: &str) {
    let stderr = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{case}: {stderr}");
    let first = stderr
        .lines()
        .find(|l| l.contains("error:") || l.contains("ERROR:"))
        .unwrap_or_else(|| panic!("{case}: no error line in {stderr}"));
    assert!(
        first.contains(flag),
        "{case}: {flag:?} not named in {first:?}"
    );
    assert!(first.contains(hint), "{case}: {hint:?} not in {first:?}");
    assert!(!stderr.contains("panicked"), "{case}: {stderr}");
    assert!(o.stdout.is_empty(), "{case}: wrote to stdout");
}

#[test]
fn usage_errors_name_the_flag_and_the_fix_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(path("empty.txt"), "\n  \n").unwrap();
    std::fs::write(path("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(path("notjson.jsonl"), "what is this\n").unwrap();
    std::fs::write(path("noquestion.jsonl"), "{\"q\": \"x\"}\n").unwrap();
    let (empty, latin1, notjson, noq) = (
        path("empty.txt"),
        path("latin1.txt"),
        path("notjson.jsonl"),
        path("noquestion.jsonl"),
    );
    let folder = dir.path().to_str().unwrap().to_string();
    let base = ["--model", "m", "--prompt", "x"];
    #[rustfmt::skip]
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--prompt", "x"], "--model", "e.g. --model"),
        (vec!["--model", " ", "--prompt", "x"], "--model", "is required"),
        (vec!["--api", "bogus"], "--api", "is not supported"),
        (vec!["--url", "not a url"], "--url", "expected e.g. http://"),
        (vec!["--url", "ftp://h/v1"], "--url", "http:// or https://"),
        (vec!["--url"], "--url", "a value is required"),
        (vec!["--number", "0"], "--number", "at least 1"),
        (vec!["--number", "abc"], "--number", "whole number"),
        (vec!["--number", "5", "--parallel", "1", "2"], "--parallel", "same length"),
        (vec!["--parallel", "0"], "--parallel", "greater than 0"),
        (vec!["--parallel", "-3"], "--parallel", "greater than 0"),
        (vec!["--rate", "0"], "--rate", "-1 for no pacing"),
        (vec!["--rate", "nan"], "--rate", "finite"),
        (vec!["--open-loop", "--rate", "0"], "--rate", "greater than 0"),
        (vec!["--open-loop", "--rate", "1", "2", "--number", "5"], "--rate", "same length"),
        (vec!["--parallel", "2", "2", "--number", "5", "5"], "--number", "must be distinct"),
        (vec!["--duration", "0"], "--duration", "> 0"),
        (vec!["--duration", "-1"], "--duration", "> 0"),
        (vec!["--warmup-num", "nan"], "--warmup-num", "must be a number"),
        (vec!["--max-tokens", "9", "3"], "--max-tokens", "must not exceed"),
        (vec!["--max-tokens", "1", "2", "3"], "--max-tokens", "one value, or two"),
        (vec!["--max-tokens", "-1"], "--max-tokens", "whole number"),
        (vec!["--min-prompt-length", "9", "--max-prompt-length", "3"], "--min-prompt-length", "greater than --max-prompt-length"),
        (vec!["--connect-timeout", "-1"], "--connect-timeout", "whole number"),
        (vec!["--read-timeout", "soon"], "--read-timeout", "whole number"),
        (vec!["--total-timeout", "1.5"], "--total-timeout", "whole number"),
        (vec!["--sleep-interval", "-1"], "--sleep-interval", "whole number"),
        (vec!["--extra-args", "{nope"], "--extra-args", "not valid JSON"),
        (vec!["--extra-args", "[1]"], "--extra-args", "JSON object"),
        (vec!["--query-template", "{bad"], "--query-template", "not valid JSON"),
        (vec!["--query-template", "[1]"], "--query-template", "JSON object"),
        (vec!["--query-template", "@/nonexistent/t.json"], "--query-template", "cannot read"),
        (vec!["--headers", "novalue"], "--headers", "expected KEY=VALUE"),
        (vec!["--headers", "=v"], "--headers", "expected KEY=VALUE"),
        (vec!["--headers", "Bad Name=v"], "--headers", "not a valid HTTP header name"),
        (vec!["--headers", "X-A=a\nb"], "--headers", "no line breaks"),
        (vec!["--api-key", "k\nx"], "--api-key", "no line breaks"),
        (vec!["--model", "m", "--prompt", "@/nonexistent/p.txt"], "--prompt", "cannot read"),
        (vec!["--mock-fault", "reset"], "--mock-fault", "add --api mock"),
        (vec!["--api", "mock", "--mock-fault", "boom"], "--mock-fault", "known faults: http-500"),
        (vec!["--api", "mock", "--mock-fault", "reset:0"], "--mock-fault", "EVERY must be"),
        (vec!["--api", "mock", "--mock-ttft-ms", "-1"], "--mock-ttft-ms", "≥ 0"),
        (vec!["--api", "mock", "--mock-itl-ms", "nan"], "--mock-itl-ms", "≥ 0"),
        (vec!["--api", "mock", "--mock-threads", "0"], "--mock-threads", "at least 1"),
        (vec!["--bogus"], "--bogus", "unexpected argument"),
        // Not a flag of this build (yet): rejected by name either way.
        (vec!["--dataset-args", "{bad"], "--dataset-args", ""),
    ];
    let dataset_cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--dataset", "zzz"], "--dataset", "is not a known dataset"),
        (
            vec!["--dataset", "openqa"],
            "--dataset-path",
            "open_qa.jsonl of the ModelScope dataset AI-ModelScope/HC3-Chinese is in no local cache",
        ),
        (
            vec![
                "--dataset",
                "openqa",
                "--dataset-path",
                "/nonexistent/d.jsonl",
            ],
            "--dataset-path",
            "no such file",
        ),
        (
            vec!["--dataset", "custom", "--dataset-path", &folder],
            "--dataset-path",
            "is a folder",
        ),
        (
            vec!["--dataset", "custom", "--dataset-path", &latin1],
            "--dataset-path",
            "cannot read",
        ),
        (
            vec!["--dataset", "custom", "--dataset-path", &empty],
            "--dataset-path",
            "Dataset is empty",
        ),
        (
            vec!["--dataset", "openqa", "--dataset-path", &notjson],
            "--dataset openqa",
            "not valid JSON",
        ),
        (
            vec!["--dataset", "openqa", "--dataset-path", &noq],
            "--dataset openqa",
            "\"question\"",
        ),
    ];
    let out = dir.path().join("out");
    let out_arg = out.to_str().unwrap();
    let with_base = cases.into_iter().map(|(args, flag, hint)| {
        let mut all: Vec<&str> = if args.contains(&"--prompt") || args.contains(&"--model") {
            vec![]
        } else {
            base.to_vec()
        };
        all.extend(args);
        (all, flag, hint)
    });
    let with_model = dataset_cases.into_iter().map(|(args, flag, hint)| {
        let mut all = vec!["--model", "m"];
        all.extend(args);
        (all, flag, hint)
    });
    let mut n = 0;
    for (mut args, flag, hint) in with_base.chain(with_model) {
        let case = format!("{args:?}");
        // `--url` without a value must stay last; everything else gets the output folder too.
        if args.last() != Some(&"--url") {
            args.extend(["--outputs-dir", out_arg]);
        }
        assert_error(&run(&args), 2, flag, hint, &case);
        assert!(
            !out.exists(),
            "{case}: a usage error wrote {}",
            out.display()
        );
        n += 1;
    }
    assert!(n >= 50, "{n} cases");
}

#[test]
fn unwritable_outputs_dir_is_a_runtime_error_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("results");
    let o = run(&[
        "--api",
        "mock",
        "--model",
        "m",
        "--prompt",
        "x",
        "--number",
        "1",
        "--outputs-dir",
        under_file.to_str().unwrap(),
    ]);
    assert_error(
        &o,
        1,
        "--outputs-dir",
        "cannot create",
        "outputs under a file",
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"", "nothing written");
}

#[test]
fn zero_timeouts_mean_none_as_in_evalscope() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let o = run(&[
        "--api",
        "mock",
        "--model",
        "m",
        "--prompt",
        "x",
        "--number",
        "3",
        "--max-tokens",
        "2",
        "--mock-ttft-ms",
        "1",
        "--mock-itl-ms",
        "1",
        "--connect-timeout",
        "0",
        "--read-timeout",
        "0",
        "--total-timeout",
        "0",
        "--no-timestamp",
        "--outputs-dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let db: &Path = &out.join("m/parallel_1_number_3/benchmark_data.db");
    let conn = rusqlite::Connection::open(db).unwrap();
    let ok: i64 = conn
        .query_row("SELECT count(*) FROM result WHERE success = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ok, 3);
}
