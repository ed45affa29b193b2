//! Per-flag parsing and checks that `RunPlan::from_cli` composes: URLs, names, files, warmup counts,
//! tokenizer, dataset-args, image and visualizer settings.

use super::*;

/// The endpoint suffix appended for each API when the URL has none.
pub(super) const ENDPOINT_SUFFIXES: [&str; 8] = [
    "chat/completions",
    "completions",
    "responses",
    "embeddings",
    "reranks",
    "rerank",
    "systemone",
    "decide",
];

/// Replaces characters that cannot be in a folder name (evalscope's rule).
pub fn sanitize_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '<' | '>' | ':' | '"' | '|' | '?' | '*' | '\\' | '/' | '\0' => '_',
            c => c,
        })
        .collect()
}

/// `--url` with the endpoint appended when its path names none. Returns the URL and whether it changed.
pub fn complete_url(raw: &str) -> Result<(Url, bool), UsageError> {
    complete_url_for(raw, "chat/completions")
}

/// `--url` with `suffix` appended when its path names no endpoint.
pub fn complete_url_for(raw: &str, suffix: &str) -> Result<(Url, bool), UsageError> {
    let mut url = Url::parse(raw).or_else(|e| {
        usage(format!(
            "--url {raw:?} is not a valid URL ({e}); expected e.g. http://127.0.0.1:8000/v1/chat/completions"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return usage(format!("--url {raw:?} must start with http:// or https://"));
    }
    let path = url.path().trim_end_matches('/').to_string();
    if ENDPOINT_SUFFIXES.iter().any(|s| path.ends_with(s)) {
        return Ok((url, false));
    }
    url.set_path(&format!("{path}/{suffix}"));
    Ok((url, true))
}

pub(super) fn read_at_file(flag: &str, value: &str) -> Result<String, UsageError> {
    match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .or_else(|e| usage(format!("{flag} @{path}: cannot read the file ({e})"))),
        None => Ok(value.to_string()),
    }
}

pub(super) fn warmup_count(warmup_num: f64, number: u64) -> u64 {
    if warmup_num <= 0.0 {
        0
    } else if warmup_num >= 1.0 {
        warmup_num as u64
    } else {
        ((warmup_num * number as f64) as u64).max(1)
    }
}

/// `--visualizer`, or the tracker a deprecated `--wandb-api-key` / `--swanlab-api-key` implies (as evalscope's
/// `init_visualizer`). A key or host for another tracker than the chosen one is an error.
pub(super) fn visualizer_settings(cli: &Cli) -> Result<Option<VisualizerSettings>, UsageError> {
    let named = cli.visualizer.as_deref().map(|v| {
        VisualizerKind::parse(v).expect("clap restricts --visualizer to the known trackers")
    });
    let kind = match named {
        Some(kind) => kind,
        None if cli.wandb_api_key.is_some() => VisualizerKind::Wandb,
        None if cli.swanlab_api_key.is_some() => VisualizerKind::Swanlab,
        None => {
            if cli.swanlab_host.is_some() {
                return usage("--swanlab-host applies only with --visualizer swanlab");
            }
            return Ok(None);
        }
    };
    let misplaced = [
        (
            "--wandb-api-key",
            cli.wandb_api_key.is_some(),
            VisualizerKind::Wandb,
        ),
        (
            "--swanlab-api-key",
            cli.swanlab_api_key.is_some(),
            VisualizerKind::Swanlab,
        ),
        (
            "--swanlab-host",
            cli.swanlab_host.is_some(),
            VisualizerKind::Swanlab,
        ),
    ];
    for (flag, given, owner) in misplaced {
        if given && owner != kind {
            return usage(format!(
                "{flag} applies only with --visualizer {}, not --visualizer {}",
                owner.name(),
                kind.name()
            ));
        }
    }
    Ok(Some(VisualizerSettings {
        kind,
        wandb_api_key: cli.wandb_api_key.as_ref().map(|k| k.expose().to_string()),
        swanlab_api_key: cli.swanlab_api_key.as_ref().map(|k| k.expose().to_string()),
        swanlab_host: cli.swanlab_host.clone(),
        implied_by_key: named.is_none(),
    }))
}

pub(super) fn is_chat_url(url: &Url) -> bool {
    url.path()
        .trim_end_matches('/')
        .ends_with("chat/completions")
}

pub(super) fn token_settings(
    cli: &Cli,
    prompts: &PromptSource,
    api: ApiKind,
) -> Result<TokenSettings, UsageError> {
    let kind = match prompts {
        PromptSource::Fixed(_) => None,
        PromptSource::Dataset { kind, .. } => Some(*kind),
    };
    let tokenizer_path = cli.tokenizer_path.clone().filter(|p| !p.trim().is_empty());
    if let Some(k) = kind.filter(|k| k.needs_tokenizer()) {
        if tokenizer_path.is_none() {
            return usage(format!(
                "--dataset {} needs --tokenizer-path (a folder with tokenizer.json, or a hub id in the local cache) to build prompts of exact token lengths",
                k.name()
            ));
        }
    }
    let live_swe_smith = matches!(
        prompts,
        PromptSource::Dataset {
            kind: DatasetKind::SweSmith,
            path: None
        }
    );
    if live_swe_smith && tokenizer_path.is_none() {
        return usage("--dataset swe_smith without --dataset-path builds its conversations from SWE-bench/SWE-smith-trajectories (live construction), which requires --tokenizer-path for accurate token counting. Please specify --tokenizer-path or provide a pre-built --dataset-path (agentic_dataset.json)");
    }
    if cli.tokenize_prompt {
        if tokenizer_path.is_none() {
            return usage(
                "--tokenize-prompt needs --tokenizer-path to turn prompts into token ids",
            );
        }
        if api.input_only() {
            return usage(format!(
                "--tokenize-prompt sends token ids to a completions endpoint; it does not apply to --api {}",
                cli.api.as_str()
            ));
        }
        if kind == Some(DatasetKind::RandomVl) {
            return usage("--tokenize-prompt cannot send images: not with --dataset random_vl");
        }
    }
    if cli.prefix_count == 0 {
        return usage("--prefix-count must be at least 1");
    }
    let random_text = matches!(kind, Some(DatasetKind::Random | DatasetKind::RandomVl));
    if cli.prefix_length > 0 && !random_text {
        return usage(format!(
            "--prefix-length applies to --dataset random and random_vl only (got {})",
            if cli.prompt.is_some() {
                "--prompt".to_string()
            } else {
                format!("--dataset {}", cli.dataset.as_str())
            }
        ));
    }
    if cli.prefix_count > 1 && (kind != Some(DatasetKind::Random) || cli.prefix_length == 0) {
        return usage(
            "--prefix-count > 1 needs --dataset random, --prefix-length > 0 and no --prompt",
        );
    }
    Ok(TokenSettings {
        tokenizer_path,
        tokenize_prompt: cli.tokenize_prompt,
        prefix_length: cli.prefix_length,
        prefix_count: cli.prefix_count,
    })
}

pub(super) fn dataset_args(
    cli: &Cli,
    tokens: &TokenSettings,
    prompts: &PromptSource,
) -> Result<DatasetArgs, UsageError> {
    let mut args = DatasetArgs::default();
    let Some(map) = &cli.dataset_args else {
        return Ok(args);
    };
    if cli.turns.multi_turn || cli.dataset.replays_trace() {
        // Validated against the multi-turn or trace schema (`multi_turn.rs`, `trace.rs`).
        return Ok(args);
    }
    // evalscope validates --dataset-args against the dataset's own schema, which forbids unknown keys: only
    // the real-text datasets take the text-length keys; every other dataset takes none.
    if let PromptSource::Dataset { kind, .. } = prompts {
        if !kind.takes_text_length_args() && !map.is_empty() {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            return usage(format!(
                "--dataset-args {}: --dataset {} takes no dataset args (evalscope's schema for it forbids every key); target_input_len, input_len_mode, prefix_file and prefix_role apply to openqa, longalpaca, share_gpt_zh, share_gpt_en and line_by_line",
                keys.join(", "),
                kind.name()
            ));
        }
    }
    for (key, value) in map {
        match key.as_str() {
            "target_input_len" => match value.as_u64() {
                Some(n) if n >= 1 => args.target_input_len = Some(n),
                _ => return usage(format!("--dataset-args target_input_len {value}: must be an integer ≥ 1")),
            },
            "input_len_mode" => {
                args.input_len_mode = match value.as_str() {
                    Some("cap") => InputLenMode::Cap,
                    Some("drop") => InputLenMode::Drop,
                    _ => return usage(format!("--dataset-args input_len_mode {value}: use \"cap\" or \"drop\"")),
                }
            }
            "prefix_file" => match value.as_str() {
                Some(p) if Path::new(p).is_file() => args.prefix_file = Some(PathBuf::from(p)),
                Some(p) => return usage(format!("--dataset-args prefix_file {p:?}: no such file")),
                None => return usage("--dataset-args prefix_file must be a path string"),
            },
            "prefix_role" => {
                args.prefix_role = match value.as_str() {
                    Some("system") => PrefixRole::System,
                    Some("user") => PrefixRole::User,
                    _ => return usage(format!("--dataset-args prefix_role {value}: use \"system\" or \"user\"")),
                }
            }
            other => {
                return usage(format!(
                    "--dataset-args: unknown key {other:?}; known keys: target_input_len, input_len_mode, prefix_file, prefix_role"
                ))
            }
        }
    }
    if args.target_input_len.is_some() && tokens.tokenizer_path.is_none() {
        return usage("--dataset-args target_input_len needs --tokenizer-path to count tokens");
    }
    if args.prefix_file.is_some() && args.target_input_len.is_none() {
        return usage("--dataset-args prefix_file needs target_input_len (the prefix fills the prompt up to it)");
    }
    if args.prefix_file.is_some() && args.input_len_mode == InputLenMode::Drop {
        return usage("--dataset-args prefix_file is incompatible with input_len_mode \"drop\": drop keeps only prompts that already fill target_input_len, so no prefix budget is left; use \"cap\"");
    }
    Ok(args)
}

pub(super) fn image_settings(cli: &Cli) -> Result<ImageSettings, UsageError> {
    let channels = match cli.image_format.as_str() {
        "RGB" => 3,
        "RGBA" => 4,
        "L" => 1,
        other => return usage(format!("--image-format {other:?}: use RGB, RGBA or L")),
    };
    for (flag, v) in [
        ("--image-width", cli.image_width),
        ("--image-height", cli.image_height),
        ("--image-num", cli.image_num),
        ("--image-patch-size", cli.image_patch_size),
    ] {
        if v == 0 {
            return usage(format!("{flag} must be at least 1"));
        }
    }
    if u64::from(cli.image_width) * u64::from(cli.image_height) > 64 * 1024 * 1024 {
        return usage("--image-width × --image-height must be at most 64 megapixels");
    }
    Ok(ImageSettings {
        width: cli.image_width,
        height: cli.image_height,
        channels,
        num: cli.image_num,
        patch_size: cli.image_patch_size,
    })
}

/// The Responses API's URL rules (evalscope `_redirect_responses_url`, `_resolve_tokenize_prompt_url`): a
/// `…/chat/completions` URL becomes `…/responses`; `--tokenize-prompt` cannot be used.
pub(super) fn responses_url(url: &mut Url, cli: &Cli) -> Result<(), UsageError> {
    if cli.tokenize_prompt {
        return usage("--tokenize-prompt is not supported with the OpenAI Responses API (--api openai_responses)");
    }
    if is_chat_url(url) {
        let path = url.path().trim_end_matches('/').to_string();
        let base = &path[..path.len() - "chat/completions".len()];
        url.set_path(&format!("{base}responses"));
        tracing::warn!(
            "OpenAI Responses API selected: URL auto-adjusted to responses endpoint ({url})"
        );
    }
    if cli.n_choices.is_some_and(|n| n > 1) {
        tracing::warn!(
            "OpenAI Responses API does not support n_choices > 1; ignoring --n-choices."
        );
    }
    Ok(())
}

/// `--api local` / `local_vllm`: the server to start; `--port` and `--attn-implementation` belong to them.
pub(super) fn local_settings(
    cli: &Cli,
    model: &str,
) -> Result<Option<crate::local_server::LocalSettings>, UsageError> {
    use crate::cli::ApiName;
    use crate::local_server::{LocalApi, LocalSettings};
    let api = match cli.api {
        ApiName::Local => LocalApi::Local,
        ApiName::LocalVllm => LocalApi::LocalVllm,
        _ => {
            for (flag, given) in [
                ("--port", cli.local.port.is_some()),
                (
                    "--attn-implementation",
                    cli.local.attn_implementation.is_some(),
                ),
            ] {
                if given {
                    return usage(format!(
                        "{flag} applies only to the server --api local / local_vllm starts; drop it, or put the port in --url"
                    ));
                }
            }
            return Ok(None);
        }
    };
    if cli.local.port == Some(0) {
        return usage("--port 0: give the port the local server should listen on");
    }
    Ok(Some(LocalSettings {
        api,
        model: model.to_string(),
        port: cli.local.port.unwrap_or(8877),
        attn_implementation: cli.local.attn_implementation.clone(),
    }))
}

/// evalscope's URL for a local server: `/v1/completions` for the speed benchmarks, else chat.
pub(super) fn local_url(port: u16, dataset: crate::cli::DatasetName) -> Url {
    use crate::cli::DatasetName;
    let endpoint = match dataset {
        DatasetName::SpeedBenchmark | DatasetName::SpeedBenchmarkLong => "completions",
        _ => "chat/completions",
    };
    Url::parse(&format!("http://127.0.0.1:{port}/v1/{endpoint}")).expect("a valid URL")
}
