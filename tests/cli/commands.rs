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
    let args = Run::against(&sim)
        .flags("--dataset open_qa")
        .input("--dataset-path", "q.jsonl", "{\"question\": \"why?\"}\n")
        .flags("--number 1")
        .ok_dir("parallel_1_number_1")
        .args();
    assert_eq!(args["dataset"], "open_qa");
    assert_eq!(args["api"], "openai");
}

#[test]
fn an_existing_run_folder_is_a_usage_error_found_before_the_dataset_loads() {
    let sim = fast_sim();
    let first = Run::against(&sim).flags("--prompt x --number 1 --no-timestamp");
    first.ok();
    // The same folder again, with a dataset that cannot load: the collision is found first.
    let err = Run::against(&sim)
        .sharing_out(&first)
        .flags("--dataset custom")
        .input("--dataset-path", "empty.txt", "\n")
        .flags("--number 1 --no-timestamp")
        .fails(2);
    assert!(
        err.contains("already exists") && !err.contains("empty"),
        "{err}"
    );
}
