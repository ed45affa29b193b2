//! Subcommands beside the flat command line (listed by `--help`, `llmperf help`, `completions`, `man` and
//! its subcommand pages, `serve-mock`'s `--mock-*` flags), value enums with suggestions for
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

#[test]
fn help_lists_the_subcommands_and_the_flat_command_line_stays_evalscopes() {
    let help = bin(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let help = text(&help.stdout);
    assert!(
        help.contains("Usage: llmperf [OPTIONS] [COMMAND]"),
        "{help}"
    );
    for sub in ["completions", "man", "merge", "serve-mock", "help"] {
        assert!(
            help.lines().any(|l| l.starts_with(&format!("  {sub} "))),
            "{sub} is not listed:\n{help}"
        );
    }
    assert!(help.contains("--url <URL>"), "the evalscope flags stay");
    let short = text(&bin(&["-h"]).stdout);
    assert!(short.contains("serve-mock"), "{short}");
    // `llmperf help` is the same page; `llmperf help <sub>` is the subcommand's.
    let o = bin(&["help"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("serve-mock"));
    for (sub, usage) in [
        ("merge", "Usage: llmperf merge [OPTIONS] <DIR>..."),
        ("serve-mock", "Usage: llmperf serve-mock [OPTIONS]"),
        ("completions", "Usage: llmperf completions <SHELL>"),
        ("man", "Usage: llmperf man [OPTIONS] [NAME]"),
    ] {
        let o = bin(&["help", sub]);
        assert_eq!(o.status.code(), Some(0), "{sub}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains(usage), "{}", text(&o.stdout));
        // The subcommand's own usage lines name the program too.
        let o = bin(&[sub, "--help"]);
        assert!(text(&o.stdout).contains(usage), "{}", text(&o.stdout));
    }
    let o = bin(&["merge"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("Usage: llmperf merge"),
        "{}",
        text(&o.stderr)
    );
    // A subcommand name later on the flat line is an error that says where it goes.
    let o = bin(&["--api", "mock", "--stream", "merge", "somewhere"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("must come first"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn man_writes_the_subcommand_pages_the_main_page_refers_to() {
    let main = text(&bin(&["man"]).stdout);
    let dir = tempfile::tempdir().unwrap();
    let o = bin(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for sub in ["completions", "man", "merge", "serve-mock"] {
        let roff_name = format!("llmperf\\-{}(1)", sub.replace('-', "\\-"));
        assert!(main.contains(&roff_name), "{roff_name} not referred to");
        let page = std::fs::read_to_string(dir.path().join(format!("llmperf-{sub}.1"))).unwrap();
        assert!(page.contains(&format!(".TH llmperf-{sub} 1")), "{page}");
        let printed = bin(&["man", sub]);
        assert_eq!(printed.status.code(), Some(0));
        assert_eq!(text(&printed.stdout), page, "llmperf man {sub}");
    }
    assert!(
        !main.contains("llmperf\\-help(1)"),
        "no page is referred to that is not written"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("llmperf.1")).unwrap(),
        main
    );
    let o = bin(&["man", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn serve_mock_takes_the_main_commands_mock_flags() {
    let (mut child, base) = serve_mock(&[
        "--mock-ttft-ms",
        "0",
        "--mock-itl-ms",
        "0",
        "--mock-output-tokens",
        "5",
        "--mock-reasoning-tokens",
        "2",
        "--mock-fault",
        "http-503:3",
    ]);
    let run = Run::with_url(&format!("{base}/chat/completions"))
        .flags("--prompt hi --number 4 --max-tokens 50");
    let out = run.output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = run.run_dir("parallel_1_number_4");
    let rows = dir.rows();
    // Request 1 is the connection test; request 3 (the second measured one) gets the 503.
    let failed: Vec<_> = rows.iter().filter(|r| !r.success).collect();
    assert_eq!(failed.len(), 1, "{rows:?}");
    assert_eq!(failed[0].status_code, Some(503));
    assert!(rows
        .iter()
        .filter(|r| r.success)
        .all(|r| r.completion_tokens == Some(5)));
    assert_eq!(dir.summary()["Avg Reasoning Tokens"], 2.0);
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}
