//! Subcommands beside the flat command line (`completions`, `man`), value enums with suggestions for
//! `--api`/`--dataset`, and the one exit-code mapping seen from outside.

use std::process::{Command, Output};

use crate::common::*;

fn bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .args(args)
        .output()
        .expect("llmperf runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn completions_print_a_script_that_knows_the_flags_and_their_values() {
    let o = bin(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let script = text(&o.stdout);
    assert!(script.contains("llmperf"), "{script}");
    for word in [
        "--url",
        "--api",
        "--dataset",
        "openai_embedding",
        "share_gpt_zh",
        "completions",
    ] {
        assert!(
            script.contains(word),
            "{word} missing from the bash completion"
        );
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = bin(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains("max-tokens"), "{shell}");
    }
    let o = bin(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("tcsh"), "{}", text(&o.stderr));
}

#[test]
fn man_prints_a_roff_page_of_every_flag() {
    let o = bin(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let page = text(&o.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
    assert!(page.contains("llmperf"));
    for flag in ["url", "parallel", "mock\\-fault", "completions"] {
        assert!(page.contains(flag), "{flag} missing from the man page");
    }
}

#[test]
fn a_typo_in_api_or_dataset_gets_the_nearest_name() {
    let o = bin(&["--model", "m", "--api", "opena"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--api \"opena\""), "{err}");
    assert!(err.contains("did you mean `--api openai`"), "{err}");
    let o = bin(&["--model", "m", "--dataset", "line_by_lines"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("did you mean `--dataset line_by_line`"),
        "{}",
        text(&o.stderr)
    );
    let help = text(&bin(&["--help"]).stdout);
    assert!(
        help.contains("openai_rerank") && help.contains("kontext_bench"),
        "{help}"
    );
}

#[test]
fn aliases_stay_as_typed_in_benchmark_args() {
    let sim = fast_sim();
    let (out, data_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let data = data_dir.path().join("q.jsonl");
    std::fs::write(&data, "{\"question\": \"why?\"}\n").unwrap();
    let url = format!("{}/v1", sim.base_url());
    ok(&llmperf(
        out.path(),
        &[
            "--url",
            &url,
            "--model",
            "m",
            "--dataset",
            "open_qa",
            "--dataset-path",
            data.to_str().unwrap(),
            "--number",
            "1",
        ],
    ));
    let args =
        json_file(&run_root(out.path(), "m").join("parallel_1_number_1/benchmark_args.json"));
    assert_eq!(args["dataset"], "open_qa");
    assert_eq!(args["api"], "openai");
}

#[test]
fn an_existing_run_folder_is_a_usage_error_found_before_the_dataset_loads() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", sim.base_url());
    let first = [
        "--url",
        &url,
        "--model",
        "m",
        "--prompt",
        "x",
        "--number",
        "1",
        "--no-timestamp",
    ];
    ok(&llmperf(out.path(), &first));
    // The same folder again, with a dataset that cannot load: the collision is found first.
    let empty = out.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let o = llmperf(
        out.path(),
        &[
            "--url",
            &url,
            "--model",
            "m",
            "--dataset",
            "custom",
            "--dataset-path",
            empty.to_str().unwrap(),
            "--number",
            "1",
            "--no-timestamp",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("already exists") && !err.contains("empty"),
        "{err}"
    );
}
