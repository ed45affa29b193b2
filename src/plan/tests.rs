//! Unit tests of `RunPlan::from_cli` and its per-flag checks.

use super::*;
use clap::Parser;

fn plan(args: &[&str]) -> Result<RunPlan, UsageError> {
    let mut v = vec!["llmperf", "--model", "org/my-model", "--prompt", "hi"];
    v.extend_from_slice(args);
    RunPlan::from_cli(Cli::try_parse_from(v).unwrap(), chrono::Local::now())
}

/// The usage error of `args`, whether clap (a value enum) or the plan finds it.
fn err(args: &[&str]) -> String {
    let mut v = vec!["llmperf", "--model", "org/my-model", "--prompt", "hi"];
    v.extend_from_slice(args);
    match Cli::try_parse_from(v) {
        Err(e) => e.to_string(),
        Ok(cli) => RunPlan::from_cli(cli, chrono::Local::now())
            .unwrap_err()
            .to_string(),
    }
}

#[test]
fn url_gets_endpoint_appended() {
    let (u, changed) = complete_url("http://h:1/v1").unwrap();
    assert!(changed);
    assert_eq!(u.as_str(), "http://h:1/v1/chat/completions");
    let (u, _) = complete_url("http://h:1/v1/?x=1").unwrap();
    assert_eq!(u.as_str(), "http://h:1/v1/chat/completions?x=1");
    let (u, changed) = complete_url("http://h:1/v1/completions").unwrap();
    assert!(!changed);
    assert_eq!(u.path(), "/v1/completions");
    assert!(complete_url("ftp://h/v1").is_err());
}

#[test]
fn sweep_runs_and_dir_names() {
    let p = plan(&[
        "--parallel",
        "1",
        "4",
        "--number",
        "10",
        "20",
        "--warmup-num",
        "0.5",
    ])
    .unwrap();
    let names: Vec<_> = p.runs.iter().map(crate::run_folder::run_name).collect();
    assert_eq!(names, ["parallel_1_number_10", "parallel_4_number_20"]);
    assert_eq!(p.runs[0].warmup, 5);
    assert_eq!(p.runs[1].warmup, 10);
    assert_eq!(p.model_id, "my-model");
    assert_eq!(p.outputs.name, "my-model");
    let closed = p.runs.iter().map(|r| r.load.parallel().map(|n| n.get()));
    assert_eq!(closed.collect::<Vec<_>>(), [Some(1), Some(4)]);
    assert!(p.runs.iter().all(|r| r.load.schedule_rate().is_none()));
}

#[test]
fn open_loop_uses_python_float_names() {
    let p = plan(&["--open-loop", "--rate", "5", "0.5", "--number", "10", "20"]).unwrap();
    assert_eq!(
        crate::run_folder::run_name(&p.runs[0]),
        "rate_5.0_number_10"
    );
    assert_eq!(
        crate::run_folder::run_name(&p.runs[1]),
        "rate_0.5_number_20"
    );
    assert_eq!(p.runs[0].load.parallel(), None);
    assert_eq!(p.runs[0].load.parallel_as_written(), -1);
    assert_eq!(p.runs[1].load.schedule_rate().map(|r| r.per_s()), Some(0.5));
}

#[test]
fn warmup_rules() {
    assert_eq!(warmup_count(0.0, 100), 0);
    assert_eq!(warmup_count(-1.0, 100), 0);
    assert_eq!(warmup_count(5.9, 100), 5);
    assert_eq!(warmup_count(0.001, 100), 1);
    assert_eq!(warmup_count(0.25, 100), 25);
}

#[test]
fn usage_errors_name_the_flag() {
    assert!(err(&["--parallel", "1", "2"]).contains("--number and --parallel"));
    assert!(err(&["--parallel", "0"]).contains("--parallel"));
    assert!(err(&["--open-loop", "--rate", "-1"]).contains("--rate"));
    assert!(err(&["--open-loop", "--rate", "1", "2"]).contains("--rate"));
    assert!(err(&["--max-tokens", "5", "2"]).contains("--max-tokens"));
    assert!(err(&["--max-tokens", "1", "2", "3"]).contains("--max-tokens"));
    assert!(err(&["--api", "nope"]).contains("--api"));
    assert!(err(&["--url", "not a url"]).contains("--url"));
    assert!(err(&["--duration", "0"]).contains("--duration"));
    assert!(err(&["--parallel", "2", "2", "--number", "5", "5"]).contains("repeats"));
    assert!(err(&["--query-template", "{bad"]).contains("--query-template"));
    assert!(
        err(&["--min-prompt-length", "9", "--max-prompt-length", "3"])
            .contains("--min-prompt-length")
    );
    let no_model = RunPlan::from_cli(
        Cli::try_parse_from(["llmperf"]).unwrap(),
        chrono::Local::now(),
    );
    assert!(no_model.unwrap_err().to_string().contains("--model"));
}

#[test]
fn dataset_needs_a_path_unless_it_has_a_hub_copy() {
    // openqa comes from the hub when there is no path (the loader finds or downloads it).
    let cli = Cli::try_parse_from(["llmperf", "--model", "m", "--dataset", "openqa"]).unwrap();
    let plan = RunPlan::from_cli(cli, chrono::Local::now()).unwrap();
    assert_eq!(plan.data_source, crate::hub::DataSource::ModelScope);
    let cli = Cli::try_parse_from(["llmperf", "--model", "m", "--dataset", "custom"]).unwrap();
    let e = RunPlan::from_cli(cli, chrono::Local::now())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--dataset-path"), "{e}");
    let e = Cli::try_parse_from(["llmperf", "--model", "m", "--data-source", "s3"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--data-source"), "{e}");
    // An unknown name is refused while parsing (a value enum), naming the flag.
    let e = Cli::try_parse_from(["llmperf", "--model", "m", "--dataset", "zzz"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--dataset"), "{e}");
}

#[test]
fn api_key_overrides_authorization_header() {
    let p = plan(&["--headers", "authorization=x", "X-A=1", "--api-key", "sk-1"]).unwrap();
    assert_eq!(
        p.headers.to_vec(),
        vec![
            ("X-A".to_string(), "1".to_string()),
            ("Authorization".to_string(), "Bearer sk-1".to_string())
        ]
    );
}

#[test]
fn chat_template_default_follows_url() {
    assert!(plan(&[]).unwrap().apply_chat_template);
    let p = plan(&["--url", "http://h/v1/completions"]).unwrap();
    assert!(!p.apply_chat_template);
    let p = plan(&["--url", "http://h/v1/completions", "--apply-chat-template"]).unwrap();
    assert!(p.apply_chat_template);
    let p = plan(&[
        "--url",
        "http://h/v1/chat/completions",
        "--no-apply-chat-template",
    ])
    .unwrap();
    assert!(!p.apply_chat_template);
}

fn plan_ds(args: &[&str]) -> Result<RunPlan, UsageError> {
    let mut v = vec!["llmperf", "--model", "m"];
    v.extend_from_slice(args);
    RunPlan::from_cli(Cli::try_parse_from(v).unwrap(), chrono::Local::now())
}

#[test]
fn token_flags_are_validated() {
    let e = |args: &[&str]| plan_ds(args).unwrap_err().to_string();
    assert!(e(&["--dataset", "random"]).contains("--tokenizer-path"));
    assert!(e(&["--prompt", "x", "--tokenize-prompt"]).contains("--tokenizer-path"));
    assert!(e(&["--prompt", "x", "--prefix-length", "3"]).contains("--prefix-length"));
    let t = ["--dataset", "random", "--tokenizer-path", "t"];
    assert!(e(&[&t[..], &["--prefix-count", "2"]].concat()).contains("--prefix-count"));
    assert!(e(&[&t[..], &["--prefix-count", "0"]].concat()).contains("--prefix-count"));
    assert!(e(&[&t[..], &["--image-format", "CMYK"]].concat()).contains("--image-format"));
    // evalscope's per-dataset schemas: `random` forbids every key, text datasets forbid unknown ones.
    assert!(
        e(&[&t[..], &["--dataset-args", r#"{"input_len_mode": "cap"}"#]].concat())
            .contains("--dataset random takes no dataset args")
    );
    let text = ["--prompt", "p", "--tokenizer-path", "t"];
    assert!(
        e(&[&text[..], &["--dataset-args", r#"{"nope": 1}"#]].concat()).contains("unknown key")
    );
    assert!(
        e(&[&text[..], &["--dataset-args", r#"{"input_len_mode": "x"}"#]].concat())
            .contains("input_len_mode")
    );
    let f = std::env::current_exe().unwrap();
    let drop_prefix = format!(
        r#"{{"target_input_len": 5, "input_len_mode": "drop", "prefix_file": "{}"}}"#,
        f.display()
    );
    assert!(e(&[&text[..], &["--dataset-args", &drop_prefix]].concat()).contains("incompatible"));
    assert!(e(&[
        "--api",
        "embedding",
        "--dataset",
        "random_embedding",
        "--tokenizer-path",
        "t",
        "--tokenize-prompt"
    ])
    .contains("--tokenize-prompt"));
    let p = plan_ds(&[&t[..], &["--prefix-length", "4", "--prefix-count", "2"]].concat()).unwrap();
    assert_eq!((p.tokens.prefix_length, p.tokens.prefix_count), (4, 2));
}

#[test]
fn tokenize_prompt_and_speed_benchmark_use_completions() {
    let t = ["--dataset", "random", "--tokenizer-path", "t"];
    let p = plan_ds(
        &[
            &t[..],
            &["--tokenize-prompt", "--url", "http://h/v1/chat/completions"],
        ]
        .concat(),
    )
    .unwrap();
    assert_eq!(p.url.path(), "/v1/completions");
    assert!(
        p.apply_chat_template,
        "decided before the rewrite, as evalscope"
    );
    let p = plan_ds(&["--dataset", "speed_benchmark"]).unwrap();
    assert_eq!(p.url.path(), "/v1/completions");
    assert!(!p.apply_chat_template);
    let p = plan_ds(&[
        "--api",
        "openai_rerank",
        "--url",
        "http://h/v1",
        "--dataset",
        "random_rerank",
        "--tokenizer-path",
        "t",
    ])
    .unwrap();
    assert_eq!(p.url.path(), "/v1/reranks");
    let p = plan_ds(&[
        "--api",
        "embedding",
        "--url",
        "http://h/v1",
        "--dataset",
        "random_embedding",
        "--tokenizer-path",
        "t",
    ])
    .unwrap();
    assert_eq!(p.url.path(), "/v1/embeddings");
}

#[test]
fn dataset_offset_advances_by_number() {
    let p = plan_ds(&[
        "--prompt",
        "x",
        "--parallel",
        "1",
        "2",
        "3",
        "--number",
        "5",
        "7",
        "9",
        "--dataset-offset",
        "2",
    ])
    .unwrap();
    let offsets: Vec<u64> = p.runs.iter().map(|r| r.dataset_offset).collect();
    assert_eq!(offsets, [2, 7, 14]);
}

#[test]
fn name_is_sanitized() {
    let p = plan(&["--name", "a/b:c", "--no-timestamp", "--outputs-dir", "o"]).unwrap();
    assert_eq!(
        crate::run_folder::RunRoot::of(&p).path(),
        PathBuf::from("o/a_b_c")
    );
}

#[test]
fn visualizer_flags_follow_evalscope_and_reject_misplaced_keys() {
    assert!(plan(&[]).unwrap().visualizer.is_none());
    let v = plan(&["--visualizer", "clearml"])
        .unwrap()
        .visualizer
        .unwrap();
    assert_eq!((v.kind, v.implied_by_key), (VisualizerKind::Clearml, false));
    let v = plan(&["--wandb-api-key", "k1"])
        .unwrap()
        .visualizer
        .unwrap();
    assert_eq!((v.kind, v.implied_by_key), (VisualizerKind::Wandb, true));
    assert_eq!(v.wandb_api_key.as_deref(), Some("k1"));
    assert!(!format!("{v:?}").contains("k1"), "Debug masks the key");
    let v = plan(&["--swanlab-api-key", "local", "--swanlab-host", "http://h"])
        .unwrap()
        .visualizer
        .unwrap();
    assert_eq!(v.kind, VisualizerKind::Swanlab);
    assert_eq!(v.swanlab_host.as_deref(), Some("http://h"));
    let e = err(&["--visualizer", "wandb", "--swanlab-api-key", "x"]);
    assert!(
        e.contains("--swanlab-api-key") && e.contains("swanlab"),
        "{e}"
    );
    let e = err(&["--swanlab-host", "http://h"]);
    assert!(e.contains("--swanlab-host"), "{e}");
    assert!(Cli::try_parse_from(["llmperf", "--visualizer", "tensorboard"]).is_err());
    assert!(
        plan(&["--enable-progress-tracker"])
            .unwrap()
            .progress_tracker
    );
}

#[test]
fn debug_of_the_plan_never_shows_a_secret() {
    let p = plan(&[
        "--api-key",
        "sk-plan-1",
        "--headers",
        "X-Api-Key=sk-plan-2",
        "X-Team=infra",
        "--wandb-api-key",
        "sk-plan-3",
    ])
    .unwrap();
    let shown = format!("{p:?}");
    assert!(shown.contains("infra"), "{shown}");
    assert!(!shown.contains("sk-plan"), "{shown}");
    assert!(shown.contains(crate::secret::MASK));
}
