//! `RunPlan::from_cli`: every cross-flag rule, checked once, turning raw flags into typed values; and the
//! plan written back out as the run's arguments file ([`args`](mod@args)).
//!
//! The engine never re-checks a flag and nothing downstream reads the raw flags. Errors here are usage
//! errors (exit code 2) and name the flag. The checks are grouped by concern: [`endpoint`] (model, API,
//! URL, headers, timeouts), [`load`] (runs of the sweep, warmup, duration), [`prompts`] (prompt source,
//! template, chat template), and per-flag helpers in `parse`.

mod agentx;
pub mod args;
mod endpoint;
mod kinds;
mod legacy_args;
mod load;
pub mod monitor;
mod multi_turn;
mod parse;
mod prompts;
pub mod repeat;
mod run_spec;
mod server_control;
mod server_side;
pub mod sharding;
pub mod sla;
#[cfg(test)]
mod tests;
mod trace;
mod traffic;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::cli::{ApiName, Cli, DatasetName};
use crate::visualizer::{VisualizerKind, VisualizerSettings};

pub use crate::error::UsageError;
pub use agentx::{agentx_duration, AgentxPlan};
pub use kinds::*;
pub use monitor::MonitorPlan;
pub use multi_turn::{IntOrRange, MultiTurnArgs, MultiTurnSettings, ThinkTime};
use parse::*;
pub use parse::{complete_url, complete_url_for, sanitize_name};
pub use repeat::Repeats;
pub use run_spec::{Load, Rate, RunRole, RunSpec};
pub use server_side::ServerSidePlan;
pub use traffic::{
    DryRun, Endpoints, ModelAssignment, ModelMix, TrafficPlan, UrlStrategy,
    DEFAULT_REQUEST_ID_HEADER,
};
pub use workload::Workload;

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// The validated plan of a whole invocation: typed values only.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// `--model`.
    pub model: String,
    /// Basename of the model (evalscope's `model_id`).
    pub model_id: String,
    /// API plugin.
    pub api: ApiKind,
    /// `--api` as typed (an alias stays an alias, as evalscope reports it).
    pub api_name: ApiName,
    /// Endpoint URL after auto-append (for `--api mock`, host and port are replaced at start).
    pub url: Url,
    /// `--url` as typed, when it named no endpoint and one was appended (the run warns about it).
    pub url_appended_to: Option<String>,
    /// Headers sent with every request (Authorization included when `--api-key` is set).
    pub headers: crate::secret::Headers,
    /// `--api-key` was given (it is in `headers`; the run's arguments file shows it masked).
    pub api_key_given: bool,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Send a test request before each run.
    pub test_connection: bool,
    /// Closed or open loop.
    pub mode: LoadMode,
    /// The runs, in order.
    pub runs: Vec<RunSpec>,
    /// `--warmup-num` (the count of each run is in [`RunSpec::warmup`]).
    pub warmup_num: f64,
    /// Soft per-run time limit.
    pub duration: Option<Duration>,
    /// Pause between runs.
    pub sleep_interval: Duration,
    /// Where prompts come from.
    pub prompts: PromptSource,
    /// `--data-source`: the hub a built-in dataset without `--dataset-path` is read from.
    pub data_source: crate::hub::DataSource,
    /// `--dataset` as typed (shown in reports even with `--prompt`, as evalscope).
    pub dataset_name: DatasetName,
    /// `--query-template` text (file already read).
    pub query_template: Option<String>,
    /// Messages (`true`) or plain prompts (`false`).
    pub apply_chat_template: bool,
    /// Prompt length filter, characters.
    pub prompt_length: (u64, u64),
    /// Body parameters.
    pub params: GenParams,
    /// Where the results go (the run root is [`crate::run_folder::RunRoot::of`] the plan).
    pub outputs: Outputs,
    /// `--name` as given (the tracker's run name; the folder name is sanitised into `outputs`).
    pub name: Option<String>,
    /// `--alias`: the display label of the report.
    pub alias: Option<String>,
    /// `--no-timestamp`: the run root has no timestamp level.
    pub no_timestamp: bool,
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
    /// Values evalscope writes into the run's arguments file exactly as typed.
    pub as_typed: AsTyped,
    /// `--sla-auto-tune`: the search settings (the runs then come from the search, not `runs`).
    pub sla: Option<sla::SlaPlan>,
    /// `--goodput`: the per-request SLOs counted into every summary.
    pub goodput: Option<crate::metrics::GoodputSlos>,
    /// What the runs send: single requests, conversations, a replayed trace or agent sessions.
    pub workload: Workload,
    /// evalscope's engine-tuning flags, validated (recorded only).
    pub tuning: crate::cli::compat::Tuning,
    /// `--enable-pd-metrics`.
    pub pd_metrics: bool,
    /// `--api local` / `local_vllm`: the server to start.
    pub local: Option<crate::local_server::LocalSettings>,
    /// `--port`.
    pub port: u16,
    /// `--server-metrics`, arrival shape, simulator reasoning and `/metrics` faults.
    pub server_side: ServerSidePlan,
    /// `--shard` / `--start-at`: this process's part of a sharded plan.
    pub sharding: Option<sharding::Sharding>,
    /// `--reset-prefix-cache`, `--server-profile`, `--target-cache-hit-rate` (issue 27).
    pub server_control: crate::server_control::ServerControlPlan,
    /// `--ui`, `--metrics-listen`, `--metrics-linger-s`, `--save-format`.
    pub monitor: MonitorPlan,
    /// Models, endpoints, request ids, the dry run.
    pub traffic: TrafficPlan,
    /// `--repeat`: runs per point (repeats 2..=K are in `runs`, after the sweep).
    pub repeats: Repeats,
}

/// Where a plan's results go: the parts of the run root's path ([`crate::run_folder::RunRoot::of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// `--outputs-dir`.
    pub dir: PathBuf,
    /// The timestamp folder (`YYYYmmdd_HHMMSS`), `None` with `--no-timestamp`.
    pub stamp: Option<String>,
    /// `--name` (sanitised), else the model's basename.
    pub name: String,
}

/// Warmup requests before a run of `number` measured ones (the `--warmup-num` rule).
pub fn warmup_requests(warmup_num: f64, number: u64) -> u64 {
    warmup_count(warmup_num, number)
}

/// Flag values that the run's arguments file shows exactly as typed (evalscope writes its parsed arguments),
/// where the plan's typed value differs: `@file` before it is read, `0` that means "no timeout", the JSON
/// of `--dataset-args` in the order written. Nothing but that file reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AsTyped {
    /// `--connect-timeout` in seconds.
    pub connect_timeout_s: Option<u64>,
    /// `--read-timeout` in seconds.
    pub read_timeout_s: Option<u64>,
    /// `--total-timeout` in seconds.
    pub total_timeout_s: u64,
    /// `--warmup-num` (evalscope writes the default as the integer `0`).
    pub warmup_num: Option<f64>,
    /// `--duration` in seconds.
    pub duration_s: Option<f64>,
    /// `--prompt` (text or `@path`).
    pub prompt: Option<String>,
    /// `--query-template` (JSON or `@path`).
    pub query_template: Option<String>,
    /// `--dataset-path`.
    pub dataset_path: Option<String>,
    /// `--data-source` as given.
    pub data_source: Option<String>,
    /// `--dataset-args`.
    pub dataset_args: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The total timeout used for `--total-timeout 0` (none): a century.
pub const NO_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `--model` and its basename (evalscope's `model_id`). A replayed trace's bodies name their own models:
/// `--model` is optional there, as in evalscope; then the model is empty and the dataset names the folder.
fn model_and_id(cli: &Cli) -> Result<(String, String), UsageError> {
    let trace_without_model =
        cli.dataset == DatasetName::WorkloadTrace && cli.model.is_none() && cli.prompt.is_none();
    if trace_without_model {
        return Ok((String::new(), cli.dataset.as_str().to_string()));
    }
    let model = endpoint::model(cli)?;
    let model_id = endpoint::model_id(&model);
    Ok((model, model_id))
}

/// The URL requests go to, and whether an endpoint was appended to `--url`.
fn request_url(
    cli: &Cli,
    api: ApiKind,
    local: Option<&crate::local_server::LocalSettings>,
) -> Result<(Url, bool), UsageError> {
    let (mut url, appended) = match local {
        // evalscope's _resolve_local_url: the server's own URL, whatever --url says.
        Some(l) => (local_url(l.port, cli.dataset), false),
        None => complete_url_for(traffic::primary_url(cli), api.endpoint_suffix())?,
    };
    if api == ApiKind::Responses {
        responses_url(&mut url, cli)?;
    }
    Ok((url, appended))
}

/// The flags as typed, for the run's arguments file (evalscope records them so).
fn as_typed(cli: &Cli, workload: &Workload) -> AsTyped {
    AsTyped {
        connect_timeout_s: cli.connect_timeout,
        read_timeout_s: cli.read_timeout,
        total_timeout_s: cli.total_timeout,
        // A replayed trace takes its warmup from its own records: evalscope records 0.
        warmup_num: cli
            .warmup_num
            .filter(|_| !matches!(workload, Workload::WorkloadTrace(_) | Workload::Replay(_))),
        duration_s: cli.duration,
        prompt: cli.prompt.clone(),
        query_template: cli.query_template.clone(),
        dataset_path: cli.dataset_path.clone(),
        data_source: cli.data_source.clone(),
        dataset_args: cli.dataset_args.clone(),
    }
}

/// The workload the flags ask for: multi-turn conversations, a workload trace, a replayed trace, an AgentX
/// scenario (`agentx`, already planned), or single requests. Each picks itself and refuses the others' flags
/// (AgentX: --multi-turn, --open-loop; multi-turn: --open-loop, which both traces need), so at most one is set.
fn workload_of(
    cli: &Cli,
    mode: LoadMode,
    prompt_source: &PromptSource,
    runs: &mut [RunSpec],
    agentx: Option<std::sync::Arc<agentx::AgentxPlan>>,
) -> Result<Workload, UsageError> {
    let multi_turn = multi_turn::multi_turn_settings(cli, mode, prompt_source)?;
    let trace = trace::workload_trace(cli, mode, prompt_source, runs)?;
    let replay = trace::replay_trace(cli, mode, prompt_source, runs)?;
    Ok(match (multi_turn, trace, replay, agentx) {
        (Some(m), ..) => Workload::MultiTurn(m),
        (_, Some(t), ..) => Workload::WorkloadTrace(t),
        (_, _, Some(r), _) => Workload::Replay(r),
        (.., Some(a)) => Workload::AgentGraph(a),
        (None, None, None, None) => Workload::SingleTurn,
    })
}

impl RunPlan {
    /// Validates `cli` into a plan. `now` names the timestamp folder.
    pub fn from_cli(
        mut cli: Cli,
        now: chrono::DateTime<chrono::Local>,
    ) -> Result<RunPlan, UsageError> {
        legacy_args::normalize(&mut cli)?;
        let (model, model_id) = model_and_id(&cli)?;
        let api = ApiKind::from(cli.api);
        let tuning = cli.tuning.validate().map_err(UsageError)?;
        let local = local_settings(&cli, &model)?;
        let (mut url, appended) = request_url(&cli, api, local.as_ref())?;
        let headers = endpoint::headers(&cli)?;
        let mut timeouts = endpoint::timeouts(&cli);
        let (mode, mut runs) = match cli.scenario.scenario {
            Some(_) => (LoadMode::Closed, Vec::new()),
            None => load::runs(&cli)?,
        };
        let agentx = agentx::agentx_plan(&cli, &mut runs)?;
        let mut duration = load::duration(&cli)?;
        if let Some(a) = &agentx {
            duration = Some(agentx::agentx_duration(a));
            if let Some(t) = a.scenario.request_timeout_seconds {
                timeouts.total = Duration::from_secs_f64(t);
            }
        }
        let max_tokens = prompts::max_tokens(&cli)?;
        let prompt_source = prompts::source(&cli)?;
        let workload = workload_of(&cli, mode, &prompt_source, &mut runs, agentx)?;
        load::check_rates(&runs, &workload)?;
        let repeats = repeat::repeats(&cli, &prompt_source, &workload, &mut runs)?;
        let tokens = token_settings(&cli, &prompt_source, api)?;
        let dataset_args = dataset_args(&cli, &tokens, &prompt_source)?;
        let image = image_settings(&cli)?;
        let query_template = prompts::query_template(&cli)?;
        prompts::check_extra_args(&cli)?;
        let apply_chat_template =
            prompts::chat_template_and_url(&cli, &prompt_source, &tokens, &mut url);
        let completions = prompts::needs_completions(&prompt_source, &tokens);
        let traffic = traffic::traffic_plan(&cli, api, &url, &headers, &|u: &mut Url| {
            if completions {
                prompts::to_completions(u)
            }
        })?;
        let outputs = outputs(&cli, &model_id, now);
        let mock = endpoint::mock_settings(&cli, api)?;
        let visualizer = visualizer_settings(&cli)?;
        let sla = sla::SlaPlan::from_cli(
            &cli.sla,
            &cli.parallel,
            &cli.rate,
            cli.sleep_interval,
            api.input_only(),
        )?;
        let goodput = crate::metrics::GoodputSlos::parse(&cli.sla.goodput)?;
        let server_side = server_side::server_side_plan(&cli, api, &runs)?;
        let server_control = server_control::server_control_plan(
            &cli,
            &prompt_source,
            &tokens,
            matches!(workload, Workload::MultiTurn(_)),
        )?;
        let shard_flags = cli.sharding.clone();
        let monitor = monitor::monitor_plan(&cli.monitor, api)?;
        let mut plan = RunPlan {
            model,
            model_id,
            api,
            api_name: cli.api,
            url,
            url_appended_to: appended.then(|| traffic::primary_url(&cli).to_string()),
            headers: crate::secret::Headers::new(headers),
            api_key_given: cli.api_key.is_some(),
            timeouts,
            test_connection: !cli.no_test_connection,
            mode,
            runs,
            warmup_num: cli.warmup_num.unwrap_or(0.0),
            duration,
            sleep_interval: Duration::from_secs(cli.sleep_interval),
            prompts: prompt_source,
            data_source: cli
                .data_source
                .as_deref()
                .and_then(crate::hub::DataSource::parse)
                .unwrap_or_default(),
            dataset_name: cli.dataset,
            query_template,
            apply_chat_template,
            prompt_length: (cli.min_prompt_length, cli.max_prompt_length),
            params: prompts::gen_params(&cli, max_tokens),
            outputs,
            name: cli.name.clone(),
            alias: cli.alias.clone(),
            no_timestamp: cli.no_timestamp,
            db_commit_interval: cli.db_commit_interval.max(1) as usize,
            log_every_n: cli.log_every_n_query.max(1) as u64,
            debug: cli.debug,
            mock,
            visualizer,
            progress_tracker: cli.enable_progress_tracker,
            tokens,
            dataset_args,
            image,
            tuning,
            pd_metrics: cli.enable_pd_metrics,
            port: cli.local.port.unwrap_or(8877),
            local,
            as_typed: as_typed(&cli, &workload),
            sla,
            goodput,
            workload,
            server_side,
            server_control,
            sharding: None,
            monitor,
            traffic,
            repeats,
        };
        plan.shard(&shard_flags)?;
        Ok(plan)
    }

    /// `--shard` / `--start-at`: this process's part and its output root; refused for the searches and
    /// replays that must run in one process.
    fn shard(&mut self, flags: &crate::cli::shard::ShardArgs) -> Result<(), UsageError> {
        self.sharding = sharding::resolve(self, flags, &|k| std::env::var(k).ok())?;
        if self.sharding.is_none() {
            return Ok(());
        }
        if self.workload.agentx().is_some() {
            return usage(
                "--scenario agentx replays its sessions in one process: drop --shard/--start-at",
            );
        }
        if self.sla.is_some() {
            return usage("--sla-auto-tune searches in one process: drop --shard/--start-at");
        }
        if self.repeats.count > 1 {
            return usage("--repeat runs in one process (llmperf merge does not join repeats): drop --repeat or --shard/--start-at");
        }
        Ok(())
    }

    /// The dataset plugin, `None` with `--prompt`.
    pub fn dataset_kind(&self) -> Option<DatasetKind> {
        match &self.prompts {
            PromptSource::Fixed(_) => None,
            PromptSource::Dataset { kind, .. } => Some(*kind),
        }
    }

    /// The dataset name shown in reports (`--dataset` even with `--prompt`, as evalscope).
    pub fn dataset_name(&self) -> &'static str {
        self.dataset_name.as_str()
    }
}

/// `--outputs-dir`, the timestamp folder and the name; an empty `--name` counts as none (Python-falsy,
/// as evalscope).
fn outputs(cli: &Cli, model_id: &str, now: chrono::DateTime<chrono::Local>) -> Outputs {
    let name = sanitize_name(
        cli.name
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or(model_id),
    );
    Outputs {
        dir: PathBuf::from(&cli.outputs_dir),
        stamp: (!cli.no_timestamp).then(|| now.format("%Y%m%d_%H%M%S").to_string()),
        name,
    }
}
