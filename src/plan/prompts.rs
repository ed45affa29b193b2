//! The prompt side of the plan: `--max-tokens`, the prompt source (`--prompt` or a dataset and its path),
//! `--query-template`, the chat-template default and the generation parameters of every body.

use super::*;

/// `--max-tokens` as `(min, max)`, and the prompt-length bounds in order.
pub(super) fn max_tokens(cli: &Cli) -> Result<(u64, u64), UsageError> {
    let max_tokens = match cli.max_tokens.as_slice() {
        [v] => (*v, *v),
        [a, b] if a <= b => (*a, *b),
        [a, b] => {
            return usage(format!(
                "--max-tokens {a} {b}: the minimum must not exceed the maximum"
            ))
        }
        _ => return usage("--max-tokens takes one value, or two (MIN MAX)"),
    };
    if cli.min_prompt_length > cli.max_prompt_length {
        return usage(format!(
            "--min-prompt-length {} is greater than --max-prompt-length {}",
            cli.min_prompt_length, cli.max_prompt_length
        ));
    }
    Ok(max_tokens)
}

/// `--prompt` (its `@file` read), or the dataset with its `--dataset-path`. The hub datasets
/// ([`DatasetKind::has_hub_cache`]) may leave the path out: the dataset loader looks the caches up, or
/// downloads the files.
pub(super) fn source(cli: &Cli) -> Result<PromptSource, UsageError> {
    let source = match &cli.prompt {
        Some(p) => PromptSource::Fixed(read_at_file("--prompt", p)?),
        None => {
            let kind = DatasetKind::from(cli.dataset);
            PromptSource::Dataset {
                kind,
                path: dataset_path(cli, kind)?,
            }
        }
    };
    if cli.tokenize_prompt
        && matches!(
            source,
            PromptSource::Dataset {
                kind: DatasetKind::MmmuMultiImage,
                ..
            }
        )
    {
        return usage("--tokenize-prompt is not supported with --dataset mmmu_multi_image: its multimodal messages cannot be sent as a flat token-id list");
    }
    Ok(source)
}

fn dataset_path(cli: &Cli, kind: DatasetKind) -> Result<Option<PathBuf>, UsageError> {
    match &cli.dataset_path {
        Some(p) => {
            let path = PathBuf::from(p);
            if !path.exists() {
                return usage(format!(
                    "--dataset-path {}: no such file or folder",
                    path.display()
                ));
            }
            // `--scenario agentx` reads the folder holding traces.jsonl.
            if path.is_dir() && !kind.reads_folders() && cli.scenario.scenario.is_none() {
                return usage(format!(
                    "--dataset-path {}: is a folder; --dataset {} reads one file, give that file",
                    path.display(),
                    kind.name()
                ));
            }
            Ok(Some(path))
        }
        // `--scenario agentx` finds its own data set in the hub caches.
        None if kind.is_synthetic() || kind.has_hub_cache() || cli.scenario.scenario.is_some() => {
            Ok(None)
        }
        None => {
            let hub = kind
                .hub_source()
                .map(|h| format!(" (evalscope downloads {h}: download it and point --dataset-path at the file or folder)"))
                .unwrap_or_default();
            usage(format!(
                "--dataset {} needs --dataset-path: llmperf reads this dataset from local files only{hub}; or use --prompt",
                kind.name()
            ))
        }
    }
}

/// `--query-template` (its `@file` read), checked to be a JSON object once `%m`/`%p` are filled in.
pub(super) fn query_template(cli: &Cli) -> Result<Option<String>, UsageError> {
    let Some(t) = &cli.query_template else {
        return Ok(None);
    };
    let text = read_at_file("--query-template", t)?;
    let probe = text.replace("%m", "m").replace("%p", "p");
    match serde_json::from_str::<serde_json::Value>(&probe) {
        Ok(serde_json::Value::Object(o)) => match crate::structured::check_body(&o) {
            Ok(()) => Ok(Some(text)),
            Err(e) => usage(format!("--query-template: {e}")),
        },
        Ok(_) => usage("--query-template must be a JSON object"),
        Err(e) => usage(format!("--query-template is not valid JSON: {e}")),
    }
}

/// The `tools`, `tool_choice` and `response_format` of `--extra-args`, checked (every schema compiled).
pub(super) fn check_extra_args(cli: &Cli) -> Result<(), UsageError> {
    match crate::structured::check_body(&cli.extra_args) {
        Ok(()) => Ok(()),
        Err(e) => usage(format!("--extra-args: {e}")),
    }
}

/// Whether bodies carry messages: `--[no-]apply-chat-template`, else whether the URL is a chat endpoint;
/// never for the speed benchmark. Token ids go to the completions endpoint, so a chat URL is turned into
/// a completions one (decided after the chat-template default, as evalscope).
pub(super) fn chat_template_and_url(
    cli: &Cli,
    prompts: &PromptSource,
    tokens: &TokenSettings,
    url: &mut Url,
) -> bool {
    let apply_chat_template = cli
        .apply_chat_template_flag()
        .unwrap_or_else(|| is_chat_url(url));
    let speed_benchmark = is_speed_benchmark(prompts);
    if needs_completions(prompts, tokens) {
        to_completions(url);
    }
    apply_chat_template && !speed_benchmark
}

fn is_speed_benchmark(prompts: &PromptSource) -> bool {
    matches!(
        prompts,
        PromptSource::Dataset {
            kind: DatasetKind::SpeedBenchmark | DatasetKind::SpeedBenchmarkLong,
            ..
        }
    )
}

/// Whether the requests go to `…/completions` rather than `…/chat/completions` (`--tokenize-prompt`,
/// the speed benchmark).
pub(super) fn needs_completions(prompts: &PromptSource, tokens: &TokenSettings) -> bool {
    tokens.tokenize_prompt || is_speed_benchmark(prompts)
}

/// A `…/chat/completions` URL rewritten to `…/completions` (others unchanged).
pub(super) fn to_completions(url: &mut Url) {
    if is_chat_url(url) {
        let path = url.path().trim_end_matches('/').to_string();
        let base = &path[..path.len() - "chat/completions".len()];
        url.set_path(&format!("{base}completions"));
    }
}

/// The generation parameters copied into every body.
pub(super) fn gen_params(cli: &Cli, max_tokens: (u64, u64)) -> GenParams {
    GenParams {
        max_tokens,
        min_tokens: cli.min_tokens,
        frequency_penalty: cli.frequency_penalty,
        repetition_penalty: cli.repetition_penalty,
        logprobs: cli.logprobs,
        n_choices: cli.n_choices,
        seed: cli.seed,
        stop: cli.stop.clone(),
        stream: cli.stream_enabled(),
        stop_token_ids: cli.stop_token_ids.clone(),
        temperature: cli.temperature,
        top_p: cli.top_p,
        top_k: cli.top_k,
        extra_args: cli.extra_args.clone(),
    }
}
