//! The flag definitions: clap's consistency check, evalscope's defaults and shapes, every flag of evalscope
//! 1.14.1 accepted, argparse's last-one-wins for a repeated flag.

use super::*;
use clap::CommandFactory;

#[test]
fn clap_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn parses_the_seed_recipe_shape() {
    let cli = Cli::try_parse_from([
        "llmperf",
        "--model",
        "m",
        "--parallel",
        "1",
        "4",
        "8",
        "--number",
        "100",
        "200",
        "400",
        "--rate",
        "-1",
        "--max-tokens",
        "128",
        "--stream",
        "--extra-args",
        r#"{"ignore_eos": true}"#,
        "--stop",
        "a",
        "b",
        "--headers",
        "X-A=1",
        "X-B=x=y",
    ])
    .unwrap();
    assert_eq!(cli.parallel, vec![1, 4, 8]);
    assert_eq!(cli.number, vec![100, 200, 400]);
    assert_eq!(cli.rate, vec![-1.0]);
    assert!(cli.stream_enabled());
    assert_eq!(cli.extra_args["ignore_eos"], serde_json::json!(true));
    assert_eq!(cli.stop, Some(vec!["a".into(), "b".into()]));
    assert_eq!(cli.headers[1].value, "x=y");
}

#[test]
fn defaults_match_evalscope() {
    let cli = Cli::try_parse_from(["llmperf", "--model", "m"]).unwrap();
    assert_eq!(cli.number, vec![1000]);
    assert_eq!(cli.parallel, vec![1]);
    assert_eq!(cli.max_tokens, vec![2048]);
    assert_eq!(cli.temperature, 0.0);
    assert_eq!(cli.total_timeout, 21600);
    assert_eq!(cli.url(), "http://127.0.0.1:8877/v1/chat/completions");
    assert!(cli.stream_enabled());
    assert_eq!(cli.apply_chat_template_flag(), None);
}

#[test]
fn last_of_stream_and_no_stream_wins() {
    let cli = Cli::try_parse_from(["llmperf", "--stream", "--no-stream"]).unwrap();
    assert!(!cli.stream_enabled());
    let cli = Cli::try_parse_from(["llmperf", "--no-stream", "--stream"]).unwrap();
    assert!(cli.stream_enabled());
}

#[test]
fn mock_fault_help_lists_every_fault() {
    let help = Cli::command().render_long_help().to_string();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for f in crate::sim::Fault::ALL {
        assert!(help.contains(f.name()), "{} missing from --help", f.name());
    }
    let cli = Cli::try_parse_from(["llmperf", "--mock-fault", "reset:7", "hang"]).unwrap();
    assert_eq!(cli.mock_fault.len(), 2);
    assert_eq!(cli.mock_fault[0].every, 7);
}

#[test]
fn bad_values_name_the_flag() {
    let err = Cli::try_parse_from(["llmperf", "--extra-args", "{oops"]).unwrap_err();
    assert!(err.to_string().contains("--extra-args"), "{err}");
    // Malformed headers are rejected by the plan, which does not echo them (they may hold a secret).
    let cli = Cli::try_parse_from(["llmperf", "--headers", "novalue"]).unwrap();
    assert!(cli.headers[0].malformed);
    let err = Cli::try_parse_from(["llmperf", "--attn-implementation", "fast"]).unwrap_err();
    assert!(err.to_string().contains("--attn-implementation"), "{err}");
}

#[test]
fn attn_implementation_takes_every_transformers_name() {
    for name in [
        "eager",
        "sdpa",
        "flash_attention_2",
        "flash_attention_3",
        "flex_attention",
    ] {
        let cli = Cli::try_parse_from(["llmperf", "--attn-implementation", name]).unwrap();
        assert_eq!(cli.local.attn_implementation.as_deref(), Some(name));
    }
}

/// evalscope 1.14.1's `evalscope perf` flags with the number of values argparse takes (`0`, `1`, `+`, `*`).
const EVALSCOPE_FLAGS: &str = include_str!("../../tests/fixtures/evalscope_perf_flags.txt");

/// A value `flag` parses (most take any text; the closed sets and JSON flags need one of theirs).
fn sample(flag: &str) -> &'static str {
    match flag {
        "--api" => "openai",
        "--dataset" => "openqa",
        "--data-source" => "huggingface",
        "--visualizer" => "wandb",
        "--sla-variable" => "rate",
        "--attn-implementation" => "sdpa",
        "--headers" => "X-A=1",
        "--extra-args" | "--dataset-args" => "{}",
        _ => "3",
    }
}

#[test]
fn every_evalscope_flag_is_accepted_with_its_number_of_values() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut checked = 0;
    for line in EVALSCOPE_FLAGS.lines().filter(|l| !l.starts_with('#')) {
        let (flag, nargs) = line.split_once(' ').expect("FLAG NARGS");
        let arg = cmd
            .get_arguments()
            .find(|a| match flag.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => a.get_short().map(|c| format!("-{c}")).as_deref() == Some(flag),
            })
            .unwrap_or_else(|| panic!("evalscope's {flag} is not a flag of llmperf"));
        let range = arg
            .get_num_args()
            .expect("a built command knows its arguments' values");
        let (min, max) = (range.min_values(), range.max_values());
        let shape_ok = match nargs {
            "0" => max == 0,
            "1" => (min, max) == (1, 1),
            "+" => min == 1 && max > 1,
            "*" => min == 0 && max > 1,
            other => panic!("{flag}: unknown nargs {other}"),
        };
        assert!(
            shape_ok,
            "{flag}: argparse takes {nargs}, llmperf {min}..={max}"
        );
        // And it parses: alone (a switch, `*`), with one value, or with two (`+`, `*`).
        let v = sample(flag);
        let argv: Vec<&str> = match nargs {
            "0" => vec![flag],
            "1" => vec![flag, v],
            _ => vec![flag, v, v],
        };
        let parsed = Cli::try_parse_from(std::iter::once("llmperf").chain(argv.iter().copied()));
        assert!(parsed.is_ok(), "{argv:?}: {}", parsed.unwrap_err());
        checked += 1;
    }
    assert_eq!(checked, 83, "every flag of the committed list");
}

#[test]
fn evalscope_abbreviations_still_name_evalscopes_flags() {
    // The resolver's list is the committed one.
    let listed: Vec<(&str, &str)> = EVALSCOPE_FLAGS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(f, _)| f.starts_with("--"))
        .collect();
    let names: Vec<&str> = listed.iter().map(|(f, _)| *f).collect();
    assert_eq!(names, crate::cli::EVALSCOPE_LONG_FLAGS);
    // Every prefix evalscope's argparse takes for one of its flags names that flag in llmperf too,
    // whatever llmperf adds (--repeat against --repetition-penalty, --mock-* against --model).
    let cmd = Cli::command();
    let mut checked = 0;
    for (flag, nargs) in listed {
        let id = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(&flag[2..]))
            .unwrap()
            .get_id()
            .clone();
        for end in 3..flag.len() {
            let prefix = &flag[..end];
            let candidates = crate::cli::EVALSCOPE_LONG_FLAGS
                .iter()
                .filter(|f| f.starts_with(prefix))
                .count();
            if candidates != 1 {
                continue;
            }
            let v = sample(flag);
            let mut argv: Vec<std::ffi::OsString> = vec!["llmperf".into(), prefix.into()];
            match nargs {
                "0" => {}
                "1" => argv.push(v.into()),
                _ => argv.extend([v.into(), v.into()]),
            }
            let argv = crate::cli::resolve_evalscope_prefixes(&cmd, argv);
            let m = Cli::command()
                .try_get_matches_from(argv)
                .unwrap_or_else(|e| panic!("{prefix} ({flag}): {e}"));
            assert_eq!(
                m.value_source(id.as_str()),
                Some(clap::parser::ValueSource::CommandLine),
                "{prefix} should be {flag}"
            );
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked} prefixes");
}

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("llmperf").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn a_repeated_flag_keeps_its_last_occurrence_as_in_argparse() {
    let cli = parse(&[
        "--min-tokens",
        "128",
        "--max-tokens",
        "256",
        "--min-tokens",
        "16",
    ]);
    assert_eq!(
        (cli.min_tokens, cli.max_tokens.clone()),
        (Some(16), vec![256])
    );
    // List flags: the last occurrence's values, not the union.
    let cli = parse(&[
        "--parallel",
        "1",
        "2",
        "--parallel",
        "4",
        "-n",
        "5",
        "--number",
        "7",
    ]);
    assert_eq!((cli.parallel, cli.number), (vec![4], vec![7]));
    let cli = parse(&[
        "--rate",
        "1",
        "2",
        "--rate",
        "3",
        "--max-tokens",
        "4",
        "8",
        "--max-tokens",
        "9",
    ]);
    assert_eq!((cli.rate, cli.max_tokens), (vec![3.0], vec![9]));
    let cli = parse(&[
        "--stop",
        "a",
        "b",
        "--stop",
        "c",
        "--stop-token-ids",
        "1",
        "--stop-token-ids",
    ]);
    assert_eq!(
        (cli.stop, cli.stop_token_ids),
        (Some(vec!["c".into()]), Some(vec![]))
    );
    let cli = parse(&["--headers", "A=1", "B=2", "--headers", "C=3"]);
    let names: Vec<&str> = cli.headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["C"]);
    // Switches, prefixes and the flattened groups too.
    let cli = parse(&[
        "--debug",
        "--debug",
        "--min-tok",
        "3",
        "--min-tokens",
        "4",
        "--max-turns",
        "2",
        "--max-turns",
        "5",
    ]);
    assert!(cli.debug);
    assert_eq!((cli.min_tokens, cli.turns.max_turns), (Some(4), Some(5)));
    let cli = parse(&[
        "--model",
        "a",
        "--model",
        "b",
        "--dataset",
        "random",
        "--dataset",
        "openqa",
    ]);
    assert_eq!(
        (cli.model.as_deref(), cli.dataset),
        (Some("b"), DatasetName::OpenQa)
    );
}

#[test]
fn llmperf_own_list_flags_add_up() {
    let cli = parse(&[
        "--mock-fault",
        "reset:7",
        "--mock-fault",
        "hang:9",
        "--goodput",
        "ttft:5",
        "--goodput",
        "tpot:6",
    ]);
    assert_eq!(cli.mock_fault.len(), 2);
    assert_eq!(cli.sla.goodput, ["ttft:5", "tpot:6"]);
}

/// argparse accepts any prefix of a flag that no other flag shares: every such abbreviation of an
/// evalscope flag must name the same flag in llmperf, so llmperf's own flags never make one ambiguous.
#[test]
fn evalscope_abbreviations_name_the_same_flag() {
    let mut cmd = Cli::command();
    cmd.build();
    // argparse's own `--help` shares prefixes with evalscope's flags too (`--he`: ambiguous there).
    let flags: Vec<(&str, &str)> = EVALSCOPE_FLAGS
        .lines()
        .filter(|l| l.starts_with("--"))
        .map(|l| l.split_once(' ').expect("FLAG NARGS"))
        .chain([("--help", "0")])
        .collect();
    let mut failures = Vec::new();
    for &(flag, nargs) in flags.iter().filter(|(f, _)| *f != "--help") {
        let id = cmd
            .get_arguments()
            .find(|a| a.get_long() == flag.strip_prefix("--"))
            .map(|a| a.get_id().clone())
            .expect("every evalscope flag is one of llmperf's");
        for end in 3..flag.len() {
            let prefix = &flag[..end];
            if flags.iter().filter(|(f, _)| f.starts_with(prefix)).count() != 1 {
                continue;
            }
            let v = sample(flag);
            let argv: Vec<&str> = match nargs {
                "0" => vec!["llmperf", prefix],
                _ => vec!["llmperf", prefix, v],
            };
            // As the binary parses: evalscope's abbreviations written out first.
            let argv = resolve_evalscope_prefixes(&cmd, argv.iter().map(Into::into).collect());
            let named = Cli::command()
                .try_get_matches_from(&argv)
                .ok()
                .and_then(|m| m.value_source(id.as_str()))
                == Some(clap::parser::ValueSource::CommandLine);
            if !named {
                failures.push(format!("{prefix} (evalscope: {flag})"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "abbreviations that do not name evalscope's flag: {failures:?}"
    );
}
