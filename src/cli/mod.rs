//! The command line, spelled exactly as `evalscope perf` spells it (spec §1).
//!
//! This is the raw form: values as typed, with only per-value parsing. Every rule that involves more than
//! one flag lives in [`crate::plan`].
//!
//! As in argparse, a flag given twice keeps its last occurrence (`--min-tokens 128 … --min-tokens 16` is 16),
//! values and all for the list flags (`--parallel 1 2 --parallel 4` is `[4]`); only llmperf's own
//! list flags (`--mock-fault`, `--goodput`, `--server-metrics`, `--lora-modules`) add up. `--url` keeps
//! every occurrence: the last is the endpoint, unless `--url-strategy` sends to all of them.
//!
//! An abbreviation argparse accepts for an evalscope flag names that flag here too: where one of
//! llmperf's own flags shares the prefix (`--u`: `--url`, `--ui`), the evalscope flag carries it as a
//! hidden alias (`--mo`, `--u`, `--ra`, `--se`, `--v`), and `cli::tests` checks every such prefix.

pub mod arrival;
pub mod compat;
mod evalscope_flags;
pub mod mock_conn;
mod mock_noise;
pub mod mock_output;
pub mod monitor;
mod multi_turn;
mod parsers;
pub mod repeat;
pub mod scenario;
pub mod server_control;
pub mod server_metrics;
pub mod shard;
pub mod sla;
pub mod traffic;
mod values;

use clap::{ArgAction, Parser};
pub use evalscope_flags::{resolve_evalscope_prefixes, EVALSCOPE_LONG_FLAGS};
pub use mock_noise::MockJitterArgs;
pub use multi_turn::MultiTurnFlags;
pub use parsers::{parse_fault_rule, parse_header, parse_json_object, whole, HeaderPair};
pub use values::{ApiName, DatasetName, NameParser};

/// A fast, truthful load generator for LLM serving endpoints; a drop-in replacement for `evalscope perf`.
///
/// Example (no server needed): llmperf --api mock --model demo --prompt 'Write a story' --parallel 1 4
/// --number 20 40 --max-tokens 64 --stream
#[derive(Debug, Clone, Parser)]
#[command(
    name = "llmperf",
    version,
    max_term_width = 110,
    infer_long_args = true,
    args_override_self = true
)]
pub struct Cli {
    // ── Endpoint ─────────────────────────────────────────────────────────────────────────────────────
    /// Model name sent as `model` in every request body; its last path component names the output folder.
    #[arg(long, alias = "mo", help_heading = "Endpoint")]
    pub model: Option<String>,

    /// API plugin (see the Simulator options for `mock`).
    #[arg(
        long,
        default_value = "openai",
        value_parser = NameParser::<ApiName>::new("--api", "is not supported", compat::UNSUPPORTED_API_HINT),
        help_heading = "Endpoint"
    )]
    pub api: ApiName,

    /// Endpoint URL. A URL whose path does not end in an API endpoint gets one appended (for `openai`:
    /// `/chat/completions`), e.g. `http://host:8000/v1` → `http://host:8000/v1/chat/completions`. Given
    /// more than once, the last one is used, unless `--url-strategy` sends to each of them.
    #[arg(
        long = "url",
        id = "url",
        value_name = "URL",
        action = ArgAction::Append,
        alias = "u",
        default_value = "http://127.0.0.1:8877/v1/chat/completions",
        help_heading = "Endpoint"
    )]
    pub urls: Vec<String>,

    /// Extra HTTP headers, each `KEY=VALUE` (e.g. `--headers X-Team=infra Authorization='Bearer x'`).
    #[arg(long, num_args = 1.., action = ArgAction::Set, value_name = "KEY=VALUE", value_parser = parse_header, help_heading = "Endpoint")]
    pub headers: Vec<HeaderPair>,

    /// API key, sent as `Authorization: Bearer <KEY>` (overrides an Authorization header). Never written
    /// to any file or log.
    #[arg(long, help_heading = "Endpoint")]
    pub api_key: Option<crate::secret::Secret>,

    /// TCP connect timeout in seconds; 0 = none [default: none].
    #[arg(long, value_name = "SECONDS", value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Endpoint")]
    pub connect_timeout: Option<u64>,

    /// Timeout in seconds while waiting for the response head or between two reads of its body; 0 = none
    /// [default: none].
    #[arg(long, value_name = "SECONDS", value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Endpoint")]
    pub read_timeout: Option<u64>,

    /// Timeout in seconds for one whole request; also the time budget of the connection test's retries;
    /// 0 = none.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 21600,
        value_parser = whole::<u64>,
        allow_negative_numbers = true,
        help_heading = "Endpoint"
    )]
    pub total_timeout: u64,

    /// Skip the test request sent before each run.
    #[arg(long, help_heading = "Endpoint")]
    pub no_test_connection: bool,

    // ── Load ─────────────────────────────────────────────────────────────────────────────────────────
    /// Requests per run, warmup excluded. Several values make a sweep, paired with `--parallel` (closed
    /// loop) or `--rate` (open loop).
    #[arg(short = 'n', long, num_args = 1.., action = ArgAction::Set, default_values_t = [1000], value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Load")]
    pub number: Vec<u64>,

    /// Requests in flight at once (closed loop). Several values make a sweep, one run per value.
    #[arg(long, num_args = 1.., action = ArgAction::Set, default_values_t = [1], allow_negative_numbers = true, help_heading = "Load")]
    pub parallel: Vec<i64>,

    /// Requests per second. Closed loop: Poisson pacing with the first value (−1 = none). Open loop: the
    /// sweep variable, one run per value (each > 0).
    #[arg(long, alias = "ra", num_args = 1.., action = ArgAction::Set, default_values_t = [-1.0], allow_negative_numbers = true, help_heading = "Load")]
    pub rate: Vec<f64>,

    /// Open loop: send on a Poisson schedule at `--rate`, whatever the number in flight.
    #[arg(long, help_heading = "Load")]
    pub open_loop: bool,

    /// Warmup requests before each run (not measured): ≥ 1 is a count, between 0 and 1 a fraction of
    /// `--number` (at least 1), ≤ 0 none [default: 0].
    #[arg(long, allow_negative_numbers = true, help_heading = "Load")]
    pub warmup_num: Option<f64>,

    /// Soft time limit per run, in seconds: stop sending once it has passed, then wait for requests in
    /// flight [default: none].
    #[arg(
        long,
        value_name = "SECONDS",
        allow_negative_numbers = true,
        help_heading = "Load"
    )]
    pub duration: Option<f64>,

    /// Seconds to sleep between the runs of a sweep.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 5,
        value_parser = whole::<u64>,
        allow_negative_numbers = true,
        help_heading = "Load"
    )]
    pub sleep_interval: u64,

    // ── Prompts ──────────────────────────────────────────────────────────────────────────────────────
    /// One fixed prompt for every request (overrides `--dataset`); `@path` reads it from a file.
    #[arg(long, help_heading = "Prompts")]
    pub prompt: Option<String>,

    /// Request body template (JSON, or `@path`): its `messages` are replaced by the dataset's, `%m` and
    /// `%p` are replaced by the model name and the prompt text; then the flags below are set on it.
    #[arg(long, help_heading = "Prompts")]
    pub query_template: Option<String>,

    /// Dataset plugin. File datasets read `--dataset-path`; the hub datasets (`openqa`, `share_gpt_*`,
    /// `longalpaca`, `trie_*`, the image sets, `swe_smith`) fall back to their hub copy; the synthetic
    /// `random*` need `--tokenizer-path`.
    #[arg(
        long,
        default_value = "openqa",
        value_parser = NameParser::<DatasetName>::new("--dataset", "is not a known dataset", ", or --prompt"),
        help_heading = "Prompts"
    )]
    pub dataset: DatasetName,

    /// Dataset file.
    #[arg(long, help_heading = "Prompts")]
    pub dataset_path: Option<String>,

    /// Where a built-in dataset (`openqa`, `share_gpt_*`, `longalpaca`, `trie_*`, `kontext_bench`,
    /// `mmmu_multi_image`, `flickr8k`, `swe_smith`) comes from when there is no --dataset-path: its
    /// ModelScope copy (the default, as evalscope), its Hugging Face copy, or `local` (the ModelScope id
    /// read as a folder). Looked up in that hub's cache, downloaded on first use.
    #[arg(long, value_name = "SOURCE", value_parser = ["modelscope", "huggingface", "local"], help_heading = "Prompts")]
    pub data_source: Option<String>,

    /// Drop dataset prompts longer than this (tokens with `--tokenizer-path`, else characters); `random`:
    /// the longest prompt drawn, in tokens.
    #[arg(long, default_value_t = 131072, value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Prompts")]
    pub max_prompt_length: u64,

    /// Drop dataset prompts shorter than this (tokens with `--tokenizer-path`, else characters); `random`:
    /// the shortest prompt drawn, in tokens.
    #[arg(long, default_value_t = 0, value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Prompts")]
    pub min_prompt_length: u64,

    /// Send messages (`{"messages": […]}`) rather than a plain `{"prompt": …}` [default: true when the URL
    /// ends in `chat/completions`].
    #[arg(
        long,
        overrides_with = "no_apply_chat_template",
        help_heading = "Prompts"
    )]
    pub apply_chat_template: bool,

    /// Send plain `{"prompt": …}` bodies.
    #[arg(long, overrides_with = "apply_chat_template", help_heading = "Prompts")]
    pub no_apply_chat_template: bool,

    /// Tokenizer for token-exact datasets (`random*`), `--tokenize-prompt` and counting tokens when the
    /// server reports no usage: a folder holding `tokenizer.json` (and `tokenizer_config.json` with the chat
    /// template), a `tokenizer.json` file, or a hub id such as `Qwen/Qwen3-4B` found in the local Hugging
    /// Face or ModelScope cache, else downloaded from ModelScope as evalscope does (`$MODELSCOPE_ENDPOINT`,
    /// `$MODELSCOPE_API_TOKEN`; then the Hugging Face hub, `$HF_ENDPOINT`, `$HF_TOKEN`; the other way round
    /// with `--data-source huggingface`) into its cache unless `HF_HUB_OFFLINE=1`.
    #[arg(long, value_name = "PATH|ORG/NAME", help_heading = "Prompts")]
    pub tokenizer_path: Option<String>,

    /// Send token ids (`{"prompt": [ids]}`) to the completions endpoint instead of text, so the server sees
    /// exactly the intended number of tokens; a `…/chat/completions` URL becomes `…/completions`. Needs
    /// `--tokenizer-path`.
    #[arg(long, help_heading = "Prompts")]
    pub tokenize_prompt: bool,

    /// `random`: tokens of a random prefix put before every prompt (shared, so a server can cache it).
    #[arg(long, default_value_t = 0, help_heading = "Prompts")]
    pub prefix_length: u64,

    /// `random`: number of distinct prefixes, given to requests round-robin (needs `--prefix-length` > 0).
    #[arg(long, default_value_t = 1, help_heading = "Prompts")]
    pub prefix_count: u64,

    /// `random`: offset into the vocabulary windows; advanced by `--number` after each run of a sweep so
    /// consecutive runs send different prompts.
    #[arg(long, default_value_t = 0, help_heading = "Prompts")]
    pub dataset_offset: u64,

    /// Dataset options as a JSON object: `target_input_len` (fit prompts to this many tokens),
    /// `input_len_mode` (`cap` keeps shorter prompts, `drop` drops them), `prefix_file` (real text
    /// prepended up to the target), `prefix_role` (`system` or `user`). Multi-turn datasets:
    /// `think_time_s` (seconds before each later turn: 2.5, [1, 4] or {"exponential_mean": 2.5}),
    /// `first_turn_length`, `subsequent_turn_length`, `chars_per_token`. `workload_trace`: `speed`,
    /// `model_override`, `model_mapping`, `match_output_length`.
    #[arg(long, value_name = "JSON", value_parser = parse_json_object, help_heading = "Prompts")]
    pub dataset_args: Option<serde_json::Map<String, serde_json::Value>>,

    /// `random_vl`: image width in pixels.
    #[arg(long, default_value_t = 224, help_heading = "Prompts")]
    pub image_width: u32,

    /// `random_vl`: image height in pixels.
    #[arg(long, default_value_t = 224, help_heading = "Prompts")]
    pub image_height: u32,

    /// `random_vl`: pixel format of the PNG images: `RGB`, `RGBA` or `L` (grey).
    #[arg(long, default_value = "RGB", help_heading = "Prompts")]
    pub image_format: String,

    /// `random_vl`: images per request.
    #[arg(long, default_value_t = 1, help_heading = "Prompts")]
    pub image_num: u32,

    /// `random_vl`: patch size in pixels for the client-side image token estimate
    /// `ceil(h/p) * ceil(w/p)` used when the server reports no usage.
    #[arg(long, default_value_t = 28, help_heading = "Prompts")]
    pub image_patch_size: u32,

    // ── Generation parameters (request body) ────────────────────────────────────────────────────────
    /// `max_tokens`: one value, or two (`MIN MAX`) to draw each request's value uniformly.
    #[arg(long, num_args = 1.., action = ArgAction::Set, default_values_t = [2048], value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Generation")]
    pub max_tokens: Vec<u64>,

    /// `min_tokens` (vLLM also needs `ignore_eos` to force a length).
    #[arg(long, value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Generation")]
    pub min_tokens: Option<u64>,

    /// `temperature`.
    #[arg(
        long,
        default_value_t = 0.0,
        allow_negative_numbers = true,
        help_heading = "Generation"
    )]
    pub temperature: f64,

    /// `top_p`.
    #[arg(long, allow_negative_numbers = true, help_heading = "Generation")]
    pub top_p: Option<f64>,

    /// `top_k`.
    #[arg(long, allow_negative_numbers = true, help_heading = "Generation")]
    pub top_k: Option<i64>,

    /// `seed`: also seeds llmperf's own random choices (max_tokens draws, Poisson schedule).
    #[arg(long, alias = "se", value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Generation")]
    pub seed: Option<u64>,

    /// `stop` sequences.
    #[arg(long, num_args = 0.., action = ArgAction::Set, help_heading = "Generation")]
    pub stop: Option<Vec<String>>,

    /// `stop_token_ids` (sent as integers).
    #[arg(long, num_args = 0.., action = ArgAction::Set, help_heading = "Generation")]
    pub stop_token_ids: Option<Vec<i64>>,

    /// Stream the response (`"stream": true` with `stream_options.include_usage`) [default].
    #[arg(long, overrides_with = "no_stream", help_heading = "Generation")]
    pub stream: bool,

    /// Ask for one whole response (`"stream": false`).
    #[arg(long, overrides_with = "stream", help_heading = "Generation")]
    pub no_stream: bool,

    /// JSON object merged last into every body (overrides anything), e.g. '{"ignore_eos": true}'.
    #[arg(long, default_value = "{}", value_parser = parse_json_object, help_heading = "Generation")]
    pub extra_args: serde_json::Map<String, serde_json::Value>,

    /// `frequency_penalty`.
    #[arg(long, allow_negative_numbers = true, help_heading = "Generation")]
    pub frequency_penalty: Option<f64>,

    /// `repetition_penalty`.
    #[arg(long, allow_negative_numbers = true, help_heading = "Generation")]
    pub repetition_penalty: Option<f64>,

    /// `logprobs: true`.
    #[arg(long, action = ArgAction::SetTrue, help_heading = "Generation")]
    pub logprobs: bool,

    /// `n` (choices per request).
    #[arg(long, value_parser = whole::<u64>, allow_negative_numbers = true, help_heading = "Generation")]
    pub n_choices: Option<u64>,

    // ── Output ───────────────────────────────────────────────────────────────────────────────────────
    /// Root folder of the results.
    #[arg(long, default_value = "outputs", help_heading = "Output")]
    pub outputs_dir: String,

    /// Name of the result folder [default: the model's last path component].
    #[arg(long, help_heading = "Output")]
    pub name: Option<String>,

    /// Display label shown in the report's Basic Information.
    #[arg(long, help_heading = "Output")]
    pub alias: Option<String>,

    /// Write results straight under `<outputs-dir>/<name>` without the `YYYYmmdd_HHMMSS` level.
    #[arg(long, help_heading = "Output")]
    pub no_timestamp: bool,

    /// Commit the SQLite database every N stored requests (also at least once a second and at the end).
    #[arg(
        long,
        default_value_t = 1000,
        allow_negative_numbers = true,
        help_heading = "Output"
    )]
    pub db_commit_interval: i64,

    /// Log the running summary every N finished requests.
    #[arg(
        long,
        default_value_t = 100,
        allow_negative_numbers = true,
        help_heading = "Output"
    )]
    pub log_every_n_query: i64,

    /// Debug logging: request starts and response chunks (secrets masked).
    #[arg(long, help_heading = "Output")]
    pub debug: bool,

    /// Keep `<root>/progress.json` up to date during the sweep (status, requests done / total, percent,
    /// current run), as evalscope does.
    #[arg(long, help_heading = "Output")]
    pub enable_progress_tracker: bool,

    /// Add PD-disaggregation estimates from each streamed reply's inter-token latencies: the first gap
    /// (`Avg PD Handoff Latency (ms)`), its excess over the reply's median later gap (`Avg PD Handoff
    /// Overhead (ms)`) and the later gaps (`Avg Steady ITL (ms)`), with their percentile columns.
    #[arg(long, help_heading = "Output")]
    pub enable_pd_metrics: bool,

    // ── Visualizer ───────────────────────────────────────────────────────────────────────────────────
    /// Log the running metrics after every request, and each run's summary, to an experiment tracker
    /// through its Python SDK (a `python3` child process, or `$LLMPERF_PYTHON`; `pip install <name>` first).
    #[arg(long, alias = "v", value_parser = ["wandb", "swanlab", "clearml"], help_heading = "Visualizer")]
    pub visualizer: Option<String>,

    /// Deprecated (use `--visualizer wandb` and `WANDB_API_KEY`): W&B API key; implies `--visualizer
    /// wandb`. Handed to the tracker through its environment only, never written to a file or log.
    #[arg(long, value_name = "KEY", help_heading = "Visualizer")]
    pub wandb_api_key: Option<crate::secret::Secret>,

    /// Deprecated (use `--visualizer swanlab` and `SWANLAB_API_KEY`): SwanLab API key, or `local` for
    /// SwanLab's local mode; implies `--visualizer swanlab`. Never written to a file or log.
    #[arg(long, value_name = "KEY", help_heading = "Visualizer")]
    pub swanlab_api_key: Option<crate::secret::Secret>,

    /// SwanLab server for a self-hosted SwanLab (with `--visualizer swanlab`).
    #[arg(long, value_name = "URL", help_heading = "Visualizer")]
    pub swanlab_host: Option<String>,

    // ── Multi-turn ──
    /// `--multi-turn` and its flags.
    #[command(flatten)]
    pub turns: MultiTurnFlags,

    // ── Simulator (`--api mock`) ─────────────────────────────────────────────────────────────────────
    /// Simulator: time to first token, in milliseconds.
    #[arg(
        long,
        default_value_t = 50.0,
        allow_negative_numbers = true,
        help_heading = "Simulator (--api mock)"
    )]
    pub mock_ttft_ms: f64,

    /// Simulator: time between tokens, in milliseconds.
    #[arg(
        long,
        default_value_t = 10.0,
        allow_negative_numbers = true,
        help_heading = "Simulator (--api mock)"
    )]
    pub mock_itl_ms: f64,

    /// Simulator: output length of a request that does not force one (`ignore_eos`); always kept within
    /// the request's `min_tokens`..`max_tokens`.
    #[arg(long, default_value_t = 64, value_parser = whole::<u32>, allow_negative_numbers = true, help_heading = "Simulator (--api mock)")]
    pub mock_output_tokens: u32,

    /// Simulator: worker threads of its own runtime.
    #[arg(long, default_value_t = 1, value_parser = whole::<usize>, allow_negative_numbers = true, help_heading = "Simulator (--api mock)")]
    pub mock_threads: usize,

    /// Simulator, for testing error handling: make every EVERY-th request (default: every one) misbehave;
    /// repeatable, the first matching rule wins (the connection test counts as request 1). KIND: http-500,
    /// http-503, http-429, http-400, reset, no-done, truncated, malformed, error-event, hang, stall,
    /// slow-drip, big-line, invalid-utf8, wrong-content-type. E.g. `--mock-fault http-503:10 reset:7`.
    #[arg(
        long,
        value_name = "KIND[:EVERY]",
        num_args = 1..,
        value_parser = parse_fault_rule,
        help_heading = "Simulator (--api mock)"
    )]
    pub mock_fault: Vec<crate::sim::FaultRule>,

    /// `--mock-jitter-cv`.
    #[command(flatten)]
    pub mock_jitter: MockJitterArgs,

    /// `--mock-max-connections`.
    #[command(flatten)]
    pub mock_conn: mock_conn::MockConnArgs,

    // ── evalscope compatibility ──────────────────────────────────────────────────────────────────────
    /// evalscope's engine-tuning flags.
    #[command(flatten)]
    pub tuning: compat::TuningFlags,

    /// evalscope's local-server flags.
    #[command(flatten)]
    pub local: compat::LocalFlags,

    /// `--sla-*` and `--goodput` (capacity planning).
    #[command(flatten)]
    pub sla: sla::SlaArgs,

    /// The simulator's capacity model.
    #[command(flatten)]
    pub capacity: sla::MockCapacityArgs,
    /// The simulator's invalid tool calls and JSON outputs.
    #[command(flatten)]
    pub mock_output: mock_output::MockOutputArgs,
    /// `--mock-prefix-cache`.
    #[command(flatten)]
    pub mock_cache: server_control::MockCacheArgs,
    /// `--reset-prefix-cache`, `--server-profile`, `--target-cache-hit-rate` and their companions.
    #[command(flatten)]
    pub server_control: server_control::ServerControlArgs,
    /// `--burstiness`, `--ramp-up`.
    #[command(flatten)]
    pub arrival: arrival::ArrivalArgs,

    /// `--server-metrics` and the simulator's `/metrics` and reasoning knobs.
    #[command(flatten)]
    pub server_side: server_metrics::ServerMetricsArgs,

    /// `--shard`, `--shard-count`, `--start-at`.
    #[command(flatten)]
    pub sharding: shard::ShardArgs,

    /// `--scenario`.
    #[command(flatten)]
    pub scenario: scenario::ScenarioArgs,

    /// `--ui`, `--metrics-listen`, `--metrics-linger-s`, `--save-format`.
    #[command(flatten)]
    pub monitor: monitor::MonitorArgs,
    /// `--lora-modules`, `--url-strategy`, the request id header, `--dry-run`.
    #[command(flatten)]
    pub traffic: traffic::TrafficArgs,

    /// Not a flag: the JSON-object flags given more than once on the command line, with their counts
    /// (only the last occurrence counts, as in argparse; see [`compat::repeated_json_flags`]).
    #[arg(skip)]
    pub repeated_json_flags: Vec<(&'static str, usize)>,
    /// `--repeat`, `--repeat-new-prompts`.
    #[command(flatten)]
    pub repeat: repeat::RepeatArgs,
}

impl Cli {
    /// `--url`: the last one given (argparse's last-one-wins), else the default.
    pub fn url(&self) -> &str {
        self.urls.last().map_or("", String::as_str)
    }

    /// Warns about each JSON-object flag given more than once: only its last value is used.
    pub fn warn_repeated_flags(&self) {
        for (flag, n) in &self.repeated_json_flags {
            tracing::warn!(
                "{flag} was given {n} times: only the last one is used (as in evalscope); put every key in one JSON object"
            );
        }
    }

    /// `--stream`/`--no-stream`, last one wins; streaming by default.
    pub fn stream_enabled(&self) -> bool {
        !self.no_stream
    }

    /// `--apply-chat-template`/`--no-apply-chat-template`, `None` when neither was given.
    pub fn apply_chat_template_flag(&self) -> Option<bool> {
        if self.apply_chat_template {
            Some(true)
        } else if self.no_apply_chat_template {
            Some(false)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests;
