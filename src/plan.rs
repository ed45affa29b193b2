//! `RunPlan::from_cli`: every cross-flag rule, checked once, turning raw flags into typed values.
//!
//! The engine never re-checks a flag. Errors here are usage errors (exit code 2) and name the flag.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::cli::Cli;
use crate::visualizer::{VisualizerKind, VisualizerSettings};

/// A usage error: a flag value or combination that cannot run. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Which API plugin talks to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// OpenAI-compatible `/v1/chat/completions` or `/v1/completions`.
    OpenAi,
    /// The built-in simulator, started in-process; requests are OpenAI-shaped.
    Mock,
    /// `/v1/embeddings` (`openai_embedding`, `embedding`): `{"input": …}` bodies, input tokens only.
    Embedding,
    /// `/v1/reranks` (`openai_rerank`, `rerank`): `{"query": …, "documents": […]}` bodies, input tokens only.
    Rerank,
}

impl ApiKind {
    /// Embedding and rerank APIs measure input only: no connection test, input-only summary columns.
    pub fn input_only(self) -> bool {
        matches!(self, ApiKind::Embedding | ApiKind::Rerank)
    }

    /// The endpoint appended to a URL that names none.
    pub fn endpoint_suffix(self) -> &'static str {
        match self {
            ApiKind::OpenAi | ApiKind::Mock => "chat/completions",
            ApiKind::Embedding => "embeddings",
            ApiKind::Rerank => "reranks",
        }
    }
}

/// Closed loop (fixed concurrency) or open loop (arrival rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// `--parallel` requests in flight; optional Poisson pacing by the first `--rate`.
    Closed,
    /// Poisson arrivals at `--rate`, no concurrency cap.
    Open,
}

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// `--prompt`: one fixed prompt, one body reused by every request.
    Fixed(String),
    /// A dataset: a file or folder, or synthetic.
    Dataset {
        /// The dataset plugin.
        kind: DatasetKind,
        /// `--dataset-path` (`None` for synthetic datasets).
        path: Option<PathBuf>,
    },
}

/// The dataset plugins this build supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// JSONL with a `question` field per line.
    OpenQa,
    /// Plain lines, JSON message arrays or whole JSON bodies.
    LineByLine,
    /// Plain lines.
    Custom,
    /// Random token windows of exact length (spec §3.1).
    Random,
    /// `random` text plus random PNG images.
    RandomVl,
    /// Embedding inputs from a `.txt` / `.json` / `.jsonl` file, one string per request.
    Embedding,
    /// As `embedding`, `batch_size` strings per request.
    EmbeddingBatch,
    /// Random-token strings for embeddings.
    RandomEmbedding,
    /// As `random_embedding`, `batch_size` strings per request.
    RandomEmbeddingBatch,
    /// Query/documents records from a file.
    Rerank,
    /// Random query and documents.
    RandomRerank,
    /// LongAlpaca-12k JSON list (`instruction`).
    LongAlpaca,
    /// ShareGPT Chinese conversations (`common_zh_70k.jsonl`).
    ShareGptZh,
    /// ShareGPT English conversations (`common_en_70k.jsonl`).
    ShareGptEn,
    /// `'熵' * L` for L in 1, 6144, 14336, 30720.
    SpeedBenchmark,
    /// `'熵' * L` for L in 63488, 129024.
    SpeedBenchmarkLong,
    /// Flickr8k webdataset shards (jpg + txt).
    Flickr8k,
    /// Kontext-bench (image + instruction).
    KontextBench,
    /// MMMU questions with several images.
    MmmuMultiImage,
}

/// Every dataset name `--dataset` accepts, with its kind.
pub const DATASETS: [(&str, DatasetKind); 21] = [
    ("openqa", DatasetKind::OpenQa),
    ("line_by_line", DatasetKind::LineByLine),
    ("custom", DatasetKind::Custom),
    ("random", DatasetKind::Random),
    ("random_vl", DatasetKind::RandomVl),
    ("embedding", DatasetKind::Embedding),
    ("embed", DatasetKind::Embedding),
    ("embedding_batch", DatasetKind::EmbeddingBatch),
    ("random_embedding", DatasetKind::RandomEmbedding),
    ("random_embedding_batch", DatasetKind::RandomEmbeddingBatch),
    ("rerank", DatasetKind::Rerank),
    ("random_rerank", DatasetKind::RandomRerank),
    ("longalpaca", DatasetKind::LongAlpaca),
    ("share_gpt_zh", DatasetKind::ShareGptZh),
    ("share_gpt_en", DatasetKind::ShareGptEn),
    ("speed_benchmark", DatasetKind::SpeedBenchmark),
    ("speed_benchmark_long", DatasetKind::SpeedBenchmarkLong),
    ("flickr8k", DatasetKind::Flickr8k),
    ("kontext_bench", DatasetKind::KontextBench),
    ("mmmu_multi_image", DatasetKind::MmmuMultiImage),
    ("open_qa", DatasetKind::OpenQa),
];

impl DatasetKind {
    /// The `--dataset` name.
    pub fn name(self) -> &'static str {
        DATASETS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// Datasets that also take a local copy of the hub dataset as a folder (image shards, ShareGPT files).
    pub fn reads_folders(self) -> bool {
        matches!(
            self,
            DatasetKind::Flickr8k
                | DatasetKind::KontextBench
                | DatasetKind::MmmuMultiImage
                | DatasetKind::ShareGptZh
                | DatasetKind::ShareGptEn
        )
    }

    /// Generated without a file.
    pub fn is_synthetic(self) -> bool {
        matches!(
            self,
            DatasetKind::Random
                | DatasetKind::RandomVl
                | DatasetKind::RandomEmbedding
                | DatasetKind::RandomEmbeddingBatch
                | DatasetKind::RandomRerank
                | DatasetKind::SpeedBenchmark
                | DatasetKind::SpeedBenchmarkLong
        )
    }

    /// Cannot run without `--tokenizer-path`.
    pub fn needs_tokenizer(self) -> bool {
        matches!(
            self,
            DatasetKind::Random
                | DatasetKind::RandomVl
                | DatasetKind::RandomEmbedding
                | DatasetKind::RandomEmbeddingBatch
                | DatasetKind::RandomRerank
        )
    }

    /// Where a user gets the files when there is no `--dataset-path` (the hub copy evalscope downloads).
    pub fn hub_source(self) -> Option<&'static str> {
        match self {
            DatasetKind::OpenQa => Some("AI-ModelScope/HC3-Chinese (open_qa.jsonl)"),
            DatasetKind::LongAlpaca => Some("Yukang/LongAlpaca-12k (LongAlpaca-12k.json)"),
            DatasetKind::ShareGptZh => Some("swift/sharegpt (common_zh_70k.jsonl)"),
            DatasetKind::ShareGptEn => Some("swift/sharegpt (common_en_70k.jsonl)"),
            DatasetKind::Flickr8k => Some("clip-benchmark/wds_flickr8k (test/*.tar shards)"),
            DatasetKind::KontextBench => Some("black-forest-labs/kontext-bench (parquet files)"),
            DatasetKind::MmmuMultiImage => Some("MMMU/MMMU (<subject>/validation-*.parquet)"),
            _ => None,
        }
    }
}

/// `input_len_mode` of `--dataset-args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLenMode {
    /// Keep prompts shorter than `target_input_len` as they are.
    Cap,
    /// Drop prompts shorter than `target_input_len`.
    Drop,
}

/// `prefix_role` of `--dataset-args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixRole {
    /// The prefix text becomes a system message (chat template on).
    System,
    /// The prefix text is put before the user's text.
    User,
}

/// `--dataset-args`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetArgs {
    /// Fit each prompt to this many tokens.
    pub target_input_len: Option<u64>,
    /// What to do with shorter prompts.
    pub input_len_mode: InputLenMode,
    /// Real-text prefix file (read at load).
    pub prefix_file: Option<PathBuf>,
    /// Where the prefix goes.
    pub prefix_role: PrefixRole,
}

impl Default for DatasetArgs {
    fn default() -> Self {
        DatasetArgs {
            target_input_len: None,
            input_len_mode: InputLenMode::Cap,
            prefix_file: None,
            prefix_role: PrefixRole::System,
        }
    }
}

/// `random_vl` image settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSettings {
    /// Pixels.
    pub width: u32,
    /// Pixels.
    pub height: u32,
    /// Channels per pixel: 1 (`L`), 3 (`RGB`), 4 (`RGBA`).
    pub channels: u8,
    /// Images per request.
    pub num: u32,
    /// Patch size for the token estimate.
    pub patch_size: u32,
}

/// Token-exact prompt settings (`random`, `--tokenize-prompt`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenSettings {
    /// `--tokenizer-path`.
    pub tokenizer_path: Option<String>,
    /// `--tokenize-prompt`.
    pub tokenize_prompt: bool,
    /// `--prefix-length`.
    pub prefix_length: u64,
    /// `--prefix-count`.
    pub prefix_count: u64,
}

/// Generation parameters copied into every body.
#[derive(Debug, Clone, PartialEq)]
pub struct GenParams {
    /// `max_tokens` as `(min, max)`; equal when fixed.
    pub max_tokens: (u64, u64),
    /// `min_tokens`.
    pub min_tokens: Option<u64>,
    /// `frequency_penalty`.
    pub frequency_penalty: Option<f64>,
    /// `repetition_penalty`.
    pub repetition_penalty: Option<f64>,
    /// `logprobs: true` when set.
    pub logprobs: bool,
    /// `n`.
    pub n_choices: Option<u64>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `stop`.
    pub stop: Option<Vec<String>>,
    /// `stream`.
    pub stream: bool,
    /// `stop_token_ids`.
    pub stop_token_ids: Option<Vec<i64>>,
    /// `temperature`.
    pub temperature: f64,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k`.
    pub top_k: Option<i64>,
    /// `--extra-args`, merged last.
    pub extra_args: serde_json::Map<String, serde_json::Value>,
}

/// Request timeouts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// `--connect-timeout`.
    pub connect: Option<Duration>,
    /// `--read-timeout` (between reads).
    pub read: Option<Duration>,
    /// `--total-timeout` (whole request; connection-test budget).
    pub total: Duration,
}

/// Simulator settings for `--api mock`.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// Time to first token.
    pub ttft: Duration,
    /// Time between tokens.
    pub itl: Duration,
    /// Natural output length.
    pub output_tokens: u32,
    /// Simulator runtime threads.
    pub threads: usize,
    /// `--mock-fault` rules.
    pub faults: Vec<crate::sim::FaultRule>,
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Measured requests.
    pub number: u64,
    /// Concurrency (−1 in open loop).
    pub parallel: i64,
    /// Rate in req/s (−1.0 when not paced).
    pub rate: f64,
    /// Warmup requests sent first, not measured.
    pub warmup: u64,
    /// `parallel_<P>_number_<N>` or `rate_<R>_number_<N>`.
    pub dir_name: String,
    /// `--dataset-offset` advanced by the `--number` of every earlier run.
    pub dataset_offset: u64,
}

impl RunSpec {
    /// Warmup plus measured requests.
    pub fn total(&self) -> u64 {
        self.number + self.warmup
    }
}

/// The validated plan of a whole invocation.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The flags as typed (for `benchmark_args.json`).
    pub cli: Cli,
    /// `--model`.
    pub model: String,
    /// Basename of the model (evalscope's `model_id`).
    pub model_id: String,
    /// API plugin.
    pub api: ApiKind,
    /// Endpoint URL after auto-append (for `--api mock`, host and port are replaced at start).
    pub url: Url,
    /// Headers sent with every request (Authorization included when `--api-key` is set).
    pub headers: Vec<(String, String)>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Send a test request before each run.
    pub test_connection: bool,
    /// Closed or open loop.
    pub mode: LoadMode,
    /// The runs, in order.
    pub runs: Vec<RunSpec>,
    /// Soft per-run time limit.
    pub duration: Option<Duration>,
    /// Pause between runs.
    pub sleep_interval: Duration,
    /// Where prompts come from.
    pub prompts: PromptSource,
    /// `--query-template` text (file already read).
    pub query_template: Option<String>,
    /// Messages (`true`) or plain prompts (`false`).
    pub apply_chat_template: bool,
    /// Prompt length filter, characters.
    pub prompt_length: (u64, u64),
    /// Body parameters.
    pub params: GenParams,
    /// Run root: `<outputs-dir>/[<timestamp>/]<name>`.
    pub output_root: PathBuf,
    /// Commit every N rows.
    pub db_commit_interval: usize,
    /// Log the running summary every N requests.
    pub log_every_n: u64,
    /// Debug logging.
    pub debug: bool,
    /// Simulator settings when `--api mock`.
    pub mock: Option<MockSettings>,
    /// `--visualizer` (or a deprecated `--*-api-key`): the experiment tracker to log to.
    pub visualizer: Option<VisualizerSettings>,
    /// `--enable-progress-tracker`: keep `<root>/progress.json` up to date.
    pub progress_tracker: bool,
    /// Tokenizer and token-exact prompt settings.
    pub tokens: TokenSettings,
    /// `--dataset-args`.
    pub dataset_args: DatasetArgs,
    /// `random_vl` images.
    pub image: ImageSettings,
}

/// The total timeout used for `--total-timeout 0` (none): a century.
pub const NO_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The endpoint suffix appended for each API when the URL has none.
const ENDPOINT_SUFFIXES: [&str; 8] = [
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

fn read_at_file(flag: &str, value: &str) -> Result<String, UsageError> {
    match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .or_else(|e| usage(format!("{flag} @{path}: cannot read the file ({e})"))),
        None => Ok(value.to_string()),
    }
}

fn warmup_count(warmup_num: f64, number: u64) -> u64 {
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
fn visualizer_settings(cli: &Cli) -> Result<Option<VisualizerSettings>, UsageError> {
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
        wandb_api_key: cli.wandb_api_key.clone(),
        swanlab_api_key: cli.swanlab_api_key.clone(),
        swanlab_host: cli.swanlab_host.clone(),
        implied_by_key: named.is_none(),
    }))
}

fn is_chat_url(url: &Url) -> bool {
    url.path()
        .trim_end_matches('/')
        .ends_with("chat/completions")
}

fn token_settings(
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
    if cli.tokenize_prompt {
        if tokenizer_path.is_none() {
            return usage(
                "--tokenize-prompt needs --tokenizer-path to turn prompts into token ids",
            );
        }
        if api.input_only() {
            return usage(format!(
                "--tokenize-prompt sends token ids to a completions endpoint; it does not apply to --api {}",
                cli.api
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
                format!("--dataset {}", cli.dataset)
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

fn dataset_args(cli: &Cli, tokens: &TokenSettings) -> Result<DatasetArgs, UsageError> {
    let mut args = DatasetArgs::default();
    let Some(map) = &cli.dataset_args else {
        return Ok(args);
    };
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
    Ok(args)
}

fn image_settings(cli: &Cli) -> Result<ImageSettings, UsageError> {
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

impl RunPlan {
    /// Validates `cli` into a plan. `now` names the timestamp folder.
    pub fn from_cli(cli: Cli, now: chrono::DateTime<chrono::Local>) -> Result<RunPlan, UsageError> {
        let model = match &cli.model {
            Some(m) if !m.trim().is_empty() => m.clone(),
            _ => return usage(
                "--model is required (the model name sent in each request, e.g. --model qwen2.5)",
            ),
        };
        let model_id = model
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(&model)
            .to_string();
        let api = match cli.api.as_str() {
            "openai" => ApiKind::OpenAi,
            "mock" => ApiKind::Mock,
            "openai_embedding" | "embedding" => ApiKind::Embedding,
            "openai_rerank" | "rerank" => ApiKind::Rerank,
            other => {
                return usage(format!(
                    "--api {other:?} is not supported; use one of: openai, openai_embedding (embedding), openai_rerank (rerank), mock"
                ))
            }
        };
        let (mut url, _) = complete_url_for(&cli.url, api.endpoint_suffix())?;

        let mut headers: Vec<(String, String)> = Vec::new();
        for h in &cli.headers {
            if h.malformed {
                // Only the start of the item is shown: the rest may be a secret.
                return usage(format!(
                    "--headers: invalid key-value pair starting {:?}: expected KEY=VALUE, e.g. X-Team=infra or Authorization='Bearer …'",
                    h.name
                ));
            }
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&h.name));
            headers.push((h.name.clone(), h.value.clone()));
        }
        if let Some(key) = &cli.api_key {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization".into(), format!("Bearer {key}")));
        }
        for (k, v) in &headers {
            // The value is never echoed: it may be a secret.
            let is_key = cli.api_key.is_some() && k == "Authorization";
            if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
                return usage(format!(
                    "--headers {k:?}: not a valid HTTP header name (letters, digits and -_.!#$%&'*+^`|~ only, e.g. X-Team=infra)"
                ));
            }
            if reqwest::header::HeaderValue::from_str(v).is_err() {
                let subject = if is_key {
                    "--api-key: the key".to_string()
                } else {
                    format!("--headers {k:?}: the value")
                };
                return usage(format!(
                    "{subject} is not a valid HTTP header value (visible characters and spaces only, no line breaks)"
                ));
            }
        }

        // 0 means no timeout, as in evalscope (aiohttp ignores timeouts ≤ 0).
        let timeouts = Timeouts {
            connect: cli
                .connect_timeout
                .filter(|&s| s > 0)
                .map(Duration::from_secs),
            read: cli.read_timeout.filter(|&s| s > 0).map(Duration::from_secs),
            total: match cli.total_timeout {
                0 => NO_TIMEOUT,
                s => Duration::from_secs(s),
            },
        };

        let mode = if cli.open_loop {
            LoadMode::Open
        } else {
            LoadMode::Closed
        };
        if cli.number.contains(&0) {
            return usage("--number: every value must be at least 1");
        }
        let runs = match mode {
            LoadMode::Closed => {
                if cli.number.len() != cli.parallel.len() {
                    return usage(format!(
                        "--number and --parallel must have the same length: --number has {} value(s), --parallel has {} (one run per pair)",
                        cli.number.len(),
                        cli.parallel.len()
                    ));
                }
                if let Some(p) = cli.parallel.iter().find(|p| **p <= 0) {
                    return usage(format!(
                        "--parallel {p}: every value must be greater than 0"
                    ));
                }
                let rate = cli.rate[0];
                if !rate.is_finite() || (rate <= 0.0 && rate != -1.0) {
                    return usage(format!(
                        "--rate {rate}: must be a finite number of requests per second > 0, or -1 for no pacing"
                    ));
                }
                cli.number
                    .iter()
                    .zip(&cli.parallel)
                    .map(|(&number, &parallel)| RunSpec {
                        number,
                        parallel,
                        rate,
                        warmup: warmup_count(cli.warmup_num, number),
                        dir_name: format!("parallel_{parallel}_number_{number}"),
                        dataset_offset: 0,
                    })
                    .collect::<Vec<_>>()
            }
            LoadMode::Open => {
                if cli.number.len() != cli.rate.len() {
                    return usage(format!(
                        "--number and --rate must have the same length in --open-loop: --number has {} value(s), --rate has {}",
                        cli.number.len(),
                        cli.rate.len()
                    ));
                }
                if let Some(r) = cli
                    .rate
                    .iter()
                    .find(|r| r.is_nan() || **r <= 0.0 || !r.is_finite())
                {
                    return usage(format!(
                        "--rate {r}: --open-loop needs every rate greater than 0 (requests per second)"
                    ));
                }
                cli.number
                    .iter()
                    .zip(&cli.rate)
                    .map(|(&number, &rate)| RunSpec {
                        number,
                        parallel: -1,
                        rate,
                        warmup: warmup_count(cli.warmup_num, number),
                        dir_name: format!(
                            "rate_{}_number_{number}",
                            crate::pyjson::float_repr(rate)
                        ),
                        dataset_offset: 0,
                    })
                    .collect()
            }
        };
        let mut runs = runs;
        let mut offset = cli.dataset_offset;
        for r in &mut runs {
            r.dataset_offset = offset;
            offset = offset.wrapping_add(r.number);
        }
        for (i, r) in runs.iter().enumerate() {
            if runs[..i].iter().any(|o| o.dir_name == r.dir_name) {
                return usage(format!(
                    "the sweep repeats the run {}: each (--number, --parallel/--rate) pair must be distinct",
                    r.dir_name
                ));
            }
        }

        if !cli.warmup_num.is_finite() {
            return usage(format!(
                "--warmup-num {}: must be a number (≥ 1: a count, between 0 and 1: a fraction of --number, ≤ 0: none)",
                cli.warmup_num
            ));
        }
        let duration = match cli.duration {
            None => None,
            Some(d) if d > 0.0 && d.is_finite() => Some(Duration::from_secs_f64(d)),
            Some(d) => return usage(format!("--duration {d}: must be a number of seconds > 0")),
        };

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

        let prompts = match &cli.prompt {
            Some(p) => PromptSource::Fixed(read_at_file("--prompt", p)?),
            None => {
                let Some(kind) = DATASETS
                    .iter()
                    .find(|(n, _)| *n == cli.dataset)
                    .map(|(_, k)| *k)
                else {
                    let names: Vec<&str> = DATASETS.iter().map(|(n, _)| *n).collect();
                    return usage(format!(
                        "--dataset {:?} is not a known dataset; use one of: {}, or --prompt",
                        cli.dataset,
                        names.join(", ")
                    ));
                };
                let path = match &cli.dataset_path {
                    Some(p) => {
                        let path = PathBuf::from(p);
                        if !path.exists() {
                            return usage(format!(
                                "--dataset-path {}: no such file or folder",
                                path.display()
                            ));
                        }
                        if path.is_dir() && !kind.reads_folders() {
                            return usage(format!(
                                "--dataset-path {}: is a folder; --dataset {} reads one file, give that file",
                                path.display(),
                                kind.name()
                            ));
                        }
                        Some(path)
                    }
                    None if kind.is_synthetic() => None,
                    None => {
                        let hub = kind
                            .hub_source()
                            .map(|h| format!(" (evalscope downloads {h}: download it and point --dataset-path at the file or folder)"))
                            .unwrap_or_default();
                        return usage(format!(
                            "--dataset {} needs --dataset-path: llmperf reads datasets from local files and downloads none{hub}; or use --prompt",
                            kind.name()
                        ));
                    }
                };
                PromptSource::Dataset { kind, path }
            }
        };
        let tokens = token_settings(&cli, &prompts, api)?;
        let dataset_args = dataset_args(&cli, &tokens)?;
        let image = image_settings(&cli)?;
        let query_template = match &cli.query_template {
            Some(t) => {
                let text = read_at_file("--query-template", t)?;
                let probe = text.replace("%m", "m").replace("%p", "p");
                match serde_json::from_str::<serde_json::Value>(&probe) {
                    Ok(serde_json::Value::Object(_)) => Some(text),
                    Ok(_) => return usage("--query-template must be a JSON object"),
                    Err(e) => return usage(format!("--query-template is not valid JSON: {e}")),
                }
            }
            None => None,
        };

        let apply_chat_template = cli
            .apply_chat_template_flag()
            .unwrap_or_else(|| is_chat_url(&url));
        let speed_benchmark = matches!(
            prompts,
            PromptSource::Dataset {
                kind: DatasetKind::SpeedBenchmark | DatasetKind::SpeedBenchmarkLong,
                ..
            }
        );
        let apply_chat_template = apply_chat_template && !speed_benchmark;
        if (tokens.tokenize_prompt || speed_benchmark) && is_chat_url(&url) {
            // Token ids go to the completions endpoint (decided after the chat-template default, as evalscope).
            let path = url.path().trim_end_matches('/').to_string();
            let base = &path[..path.len() - "chat/completions".len()];
            url.set_path(&format!("{base}completions"));
        }

        let params = GenParams {
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
        };

        // An empty --name counts as none (Python-falsy, as evalscope).
        let name = sanitize_name(
            cli.name
                .as_deref()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or(&model_id),
        );
        let mut output_root = PathBuf::from(&cli.outputs_dir);
        if !cli.no_timestamp {
            output_root.push(now.format("%Y%m%d_%H%M%S").to_string());
        }
        output_root.push(name);

        let mock = match api {
            ApiKind::Mock => {
                for (flag, v) in [
                    ("--mock-ttft-ms", cli.mock_ttft_ms),
                    ("--mock-itl-ms", cli.mock_itl_ms),
                ] {
                    if !(v >= 0.0 && v.is_finite()) {
                        return usage(format!("{flag} {v}: must be a number of milliseconds ≥ 0"));
                    }
                }
                if cli.mock_threads == 0 {
                    return usage("--mock-threads must be at least 1");
                }
                Some(MockSettings {
                    ttft: Duration::from_secs_f64(cli.mock_ttft_ms / 1000.0),
                    itl: Duration::from_secs_f64(cli.mock_itl_ms / 1000.0),
                    output_tokens: cli.mock_output_tokens,
                    threads: cli.mock_threads,
                    faults: cli.mock_fault.clone(),
                })
            }
            ApiKind::OpenAi | ApiKind::Embedding | ApiKind::Rerank => {
                if !cli.mock_fault.is_empty() {
                    return usage(
                        "--mock-fault configures the built-in simulator: add --api mock, or drop --mock-fault",
                    );
                }
                None
            }
        };

        let visualizer = visualizer_settings(&cli)?;
        let progress_tracker = cli.enable_progress_tracker;

        Ok(RunPlan {
            model,
            model_id,
            api,
            url,
            headers,
            timeouts,
            test_connection: !cli.no_test_connection,
            mode,
            runs,
            duration,
            sleep_interval: Duration::from_secs(cli.sleep_interval),
            prompts,
            query_template,
            apply_chat_template,
            prompt_length: (cli.min_prompt_length, cli.max_prompt_length),
            params,
            output_root,
            db_commit_interval: cli.db_commit_interval.max(1) as usize,
            log_every_n: cli.log_every_n_query.max(1) as u64,
            debug: cli.debug,
            mock,
            visualizer,
            progress_tracker,
            tokens,
            dataset_args,
            image,
            cli,
        })
    }

    /// The dataset plugin, `None` with `--prompt`.
    pub fn dataset_kind(&self) -> Option<DatasetKind> {
        match &self.prompts {
            PromptSource::Fixed(_) => None,
            PromptSource::Dataset { kind, .. } => Some(*kind),
        }
    }

    /// The dataset name shown in reports (`--dataset` even with `--prompt`, as evalscope).
    pub fn dataset_name(&self) -> &str {
        &self.cli.dataset
    }

    /// `host:port` of the endpoint.
    pub fn endpoint_label(&self) -> String {
        let host = self.url.host_str().unwrap_or("");
        match self.url.port_or_known_default() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<RunPlan, UsageError> {
        let mut v = vec!["llmperf", "--model", "org/my-model", "--prompt", "hi"];
        v.extend_from_slice(args);
        RunPlan::from_cli(Cli::try_parse_from(v).unwrap(), chrono::Local::now())
    }

    fn err(args: &[&str]) -> String {
        plan(args).unwrap_err().to_string()
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
        let names: Vec<_> = p.runs.iter().map(|r| r.dir_name.as_str()).collect();
        assert_eq!(names, ["parallel_1_number_10", "parallel_4_number_20"]);
        assert_eq!(p.runs[0].warmup, 5);
        assert_eq!(p.runs[1].warmup, 10);
        assert_eq!(p.model_id, "my-model");
        assert!(p.output_root.ends_with("my-model"));
    }

    #[test]
    fn open_loop_uses_python_float_names() {
        let p = plan(&["--open-loop", "--rate", "5", "0.5", "--number", "10", "20"]).unwrap();
        assert_eq!(p.runs[0].dir_name, "rate_5.0_number_10");
        assert_eq!(p.runs[1].dir_name, "rate_0.5_number_20");
        assert_eq!(p.runs[0].parallel, -1);
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
    fn dataset_needs_a_path() {
        let cli = Cli::try_parse_from(["llmperf", "--model", "m", "--dataset", "openqa"]).unwrap();
        let e = RunPlan::from_cli(cli, chrono::Local::now())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dataset-path"), "{e}");
        let cli = Cli::try_parse_from(["llmperf", "--model", "m", "--dataset", "zzz"]).unwrap();
        let e = RunPlan::from_cli(cli, chrono::Local::now())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dataset"), "{e}");
    }

    #[test]
    fn api_key_overrides_authorization_header() {
        let p = plan(&["--headers", "authorization=x", "X-A=1", "--api-key", "sk-1"]).unwrap();
        assert_eq!(
            p.headers,
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
        assert!(
            e(&[&t[..], &["--dataset-args", r#"{"nope": 1}"#]].concat()).contains("unknown key")
        );
        assert!(
            e(&[&t[..], &["--dataset-args", r#"{"input_len_mode": "x"}"#]].concat())
                .contains("input_len_mode")
        );
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
        let p =
            plan_ds(&[&t[..], &["--prefix-length", "4", "--prefix-count", "2"]].concat()).unwrap();
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
        assert_eq!(p.output_root, PathBuf::from("o/a_b_c"));
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
}
