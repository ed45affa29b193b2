//! The server-control flags (issue 27): resetting the server's prefix cache (`--reset-prefix-cache`,
//! `--server-kind`, `--server-control-best-effort`), synthetic prompts with a chosen prefix-cache hit rate
//! (`--target-cache-hit-rate`), the server's profiler (`--server-profile*`), and the simulator's
//! `--mock-prefix-cache` (flattened into [`super::Cli`] and into `llmperf serve-mock`).
//!
//! Names avoid every prefix argparse resolves to one evalscope flag (`--pro` is `--prompt`, `--prefix-c`
//! is `--prefix-count`, `--c` is `--connect-timeout`), so `--server-profile`, not `--profile-server`.

use clap::{Args, ValueEnum};

/// `--reset-prefix-cache`: when the server's prefix cache is reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ResetWhen {
    /// Never (the default).
    #[default]
    #[value(name = "none")]
    Never,
    /// Once, before the first measured request of the first run.
    #[value(name = "once")]
    Once,
    /// Before the first measured request of every run (sweep point, SLA probe).
    #[value(name = "each-run")]
    EachRun,
}

impl ResetWhen {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            ResetWhen::Never => "none",
            ResetWhen::Once => "once",
            ResetWhen::EachRun => "each-run",
        }
    }
}

/// `--server-kind`: which engine's control endpoints to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerKind {
    /// vLLM: `POST /reset_prefix_cache`, `/start_profile`, `/stop_profile`.
    #[value(name = "vllm")]
    Vllm,
    /// SGLang: `POST /flush_cache`, `/start_profile`, `/stop_profile`.
    #[value(name = "sglang")]
    Sglang,
    /// llama.cpp's `llama-server`: `POST /slots/{id}?action=erase` on every slot (needs `--slot-save-path`;
    /// `--cache-ram 0` too, as an erase leaves the host-memory prompt cache).
    #[value(name = "llama.cpp", alias = "llamacpp")]
    LlamaCpp,
}

impl ServerKind {
    /// The name as typed.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::LlamaCpp => "llama.cpp",
        }
    }
}

/// `on` / `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    #[value(name = "on")]
    On,
    /// Off.
    #[value(name = "off")]
    Off,
}

/// The server-control flags.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerControlArgs {
    /// Reset the server's prefix cache right before the first measured request (after the connection test
    /// and the warmup): `none`, `once` (first run only) or `each-run` (every sweep point and SLA probe).
    /// vLLM: `POST /reset_prefix_cache` (needs `VLLM_SERVER_DEV_MODE=1`); SGLang: `POST /flush_cache`;
    /// llama.cpp: erases every slot. A failed reset stops the sweep (exit 1) unless
    /// `--server-control-best-effort`. See docs/cache-control.md.
    #[arg(
        long,
        value_name = "WHEN",
        default_value = "none",
        help_heading = "Server control"
    )]
    pub reset_prefix_cache: ResetWhen,

    /// The server's engine, for its control endpoints (default: detected from `GET /v1/models`).
    #[arg(long, value_name = "KIND", help_heading = "Server control")]
    pub server_kind: Option<ServerKind>,

    /// A failed reset or profiler call warns and is recorded instead of stopping the sweep.
    #[arg(long, help_heading = "Server control")]
    pub server_control_best_effort: bool,

    /// `random` dataset: build prompts from 16-token blocks so that the expected share of prompt tokens a
    /// warm prefix cache serves is F (0 to 1); the summary reports expected vs measured. Token-exact with
    /// `--tokenize-prompt`. Not with `--prefix-length`.
    #[arg(long, value_name = "F", value_parser = fraction, help_heading = "Server control")]
    pub target_cache_hit_rate: Option<f64>,

    /// Run the server's profiler (`POST /start_profile`, `/stop_profile`; vLLM needs
    /// `VLLM_TORCH_PROFILER_DIR`, SGLang `SGLANG_TORCH_PROFILER_DIR`) over each run's measured requests.
    #[arg(long, help_heading = "Server control")]
    pub server_profile: bool,

    /// With `--server-profile`: start the profiler once N requests are in flight, not at the run's start.
    #[arg(long, value_name = "N", help_heading = "Server control")]
    pub server_profile_at_inflight: Option<usize>,

    /// With `--server-profile`: stop the profiler after S seconds (default: at the run's end).
    #[arg(long, value_name = "S", help_heading = "Server control")]
    pub server_profile_seconds: Option<f64>,
}

/// `--mock-prefix-cache`, for `llmperf --api mock` and `llmperf serve-mock`.
#[derive(Debug, Clone, Default, Args)]
pub struct MockCacheArgs {
    /// Simulator: report repeated prompt prefixes as cached tokens (`on`, or the flag alone) or never
    /// (`off`). Default: on for multi-turn, replayed-trace and AgentX runs, off otherwise (serve-mock: off).
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_missing_value = "on", help_heading = "Simulator (--api mock)")]
    pub mock_prefix_cache: Option<OnOff>,
}

/// A number in [0, 1]; the error names the flag.
fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--target-cache-hit-rate {s}: must be a number from 0 to 1"
        )),
    }
}
