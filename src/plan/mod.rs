//! `RunPlan::from_cli`: every cross-flag rule, checked once, turning raw flags into typed values.
//!
//! The engine never re-checks a flag. Errors here are usage errors (exit code 2) and name the flag.

mod kinds;
mod parse;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::cli::Cli;
use crate::visualizer::{VisualizerKind, VisualizerSettings};

pub use kinds::*;
use parse::*;
pub use parse::{complete_url, complete_url_for, sanitize_name};

/// A usage error: a flag value or combination that cannot run. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
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
    pub headers: crate::secret::Headers,
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
    /// `--sla-auto-tune`: the search settings (the runs then come from the search, not `runs`).
    pub sla: Option<crate::sla::SlaPlan>,
}

/// Warmup requests before a run of `number` measured ones (the `--warmup-num` rule).
pub fn warmup_requests(warmup_num: f64, number: u64) -> u64 {
    warmup_count(warmup_num, number)
}

/// The total timeout used for `--total-timeout 0` (none): a century.
pub const NO_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 86_400);

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
            headers.push(("Authorization".into(), format!("Bearer {}", key.expose())));
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
                    None if kind == DatasetKind::Flickr8k => {
                        match crate::dataset::cached_flickr8k() {
                            Ok(found) => Some(found),
                            Err(message) => return usage(message),
                        }
                    }
                    None if matches!(
                        kind,
                        DatasetKind::KontextBench | DatasetKind::MmmuMultiImage
                    ) =>
                    {
                        match crate::dataset::cached_vision_dataset(
                            kind == DatasetKind::KontextBench,
                        ) {
                            Ok(found) => Some(found),
                            Err(message) => return usage(message),
                        }
                    }
                    None => {
                        let hub = kind
                            .hub_source()
                            .map(|h| format!(" (evalscope downloads {h}: download it and point --dataset-path at the file or folder)"))
                            .unwrap_or_default();
                        return usage(format!(
                            "--dataset {} needs --dataset-path: llmperf reads this dataset from local files only{hub}; or use --prompt",
                            kind.name()
                        ));
                    }
                };
                PromptSource::Dataset { kind, path }
            }
        };
        if cli.tokenize_prompt
            && matches!(
                prompts,
                PromptSource::Dataset {
                    kind: DatasetKind::MmmuMultiImage,
                    ..
                }
            )
        {
            return usage("--tokenize-prompt is not supported with --dataset mmmu_multi_image: its multimodal messages cannot be sent as a flat token-id list");
        }
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
                    max_batch: cli.capacity.mock_max_batch,
                    prefill_tok_per_s: cli.capacity.mock_prefill_tok_per_s,
                    decode_tok_per_s: cli.capacity.mock_decode_tok_per_s,
                })
            }
            ApiKind::OpenAi | ApiKind::Embedding | ApiKind::Rerank => {
                let c = &cli.capacity;
                if c.mock_max_batch > 0
                    || c.mock_prefill_tok_per_s > 0
                    || c.mock_decode_tok_per_s > 0
                {
                    return usage(
                        "--mock-max-batch, --mock-prefill-tok-per-s and --mock-decode-tok-per-s configure the built-in simulator: add --api mock, or drop them",
                    );
                }
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
        let sla = crate::sla::SlaPlan::from_cli(
            &cli.sla,
            &cli.parallel,
            &cli.rate,
            cli.sleep_interval,
            api.input_only(),
        )
        .map_err(UsageError)?;

        Ok(RunPlan {
            model,
            model_id,
            api,
            url,
            headers: crate::secret::Headers::new(headers),
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
            sla,
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
