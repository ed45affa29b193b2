//! `--scenario agentx`: evalscope's checks of the flags an AgentX run may take (`validate_agentx_arguments`),
//! the data set's provenance and trace (a bad line, an unknown key or a checksum mismatch is a usage error
//! naming it), the duration and seed defaults, and one run per `--parallel` value in evalscope's folders
//! (`agentx_<variant>/parallel_<N>`).

use std::sync::Arc;
use std::time::Duration;

use super::{usage, Load, RunRole, RunSpec, UsageError};
use crate::cli::{ApiName, Cli, DatasetName};
use crate::scenario::{self, AgentX, Graph, Provenance};

/// A checked AgentX replay.
#[derive(Debug, Clone)]
pub struct AgentxPlan {
    /// The scenario.
    pub scenario: AgentX,
    /// The data set.
    pub provenance: Provenance,
    /// The sessions replayed, in trace order (the smoke limit and `max_context_length` applied).
    pub graphs: Vec<Graph>,
    /// Seconds each run sends for.
    pub duration_s: f64,
    /// `--seed`, else evalscope's default: the prompts' content.
    pub seed: u64,
}

/// evalscope's flag checks for an AgentX run.
fn check_flags(cli: &Cli, s: &AgentX) -> Result<(), UsageError> {
    if !matches!(cli.api, ApiName::OpenAi | ApiName::Mock) {
        return usage("AgentX supports only --api openai (OpenAI Chat Completions).");
    }
    if cli.open_loop || cli.turns.multi_turn || cli.sla.sla_auto_tune {
        return usage("AgentX does not support --open-loop, --multi-turn, or --sla-auto-tune.");
    }
    if cli.rate != [-1.0] {
        return usage("AgentX uses closed-loop session-tree concurrency; --rate is not supported.");
    }
    if cli.warmup_num.is_some_and(|w| w != 0.0) {
        return usage("AgentX owns warmup through AIPerf; --warmup-num is not supported.");
    }
    if cli.dataset_args.is_some() {
        return usage("AgentX does not support --dataset-args.");
    }
    if cli.dataset != DatasetName::OpenQa {
        return usage("AgentX chooses its Weka dataset from --scenario; do not pass --dataset.");
    }
    if cli.number != [1000] {
        return usage("AgentX is duration-based; --number is not supported.");
    }
    if !s.smoke
        && cli
            .duration
            .is_some_and(|d| d < scenario::MIN_BENCHMARK_DURATION_S)
    {
        return usage("AgentX benchmark mode requires --duration >= 900 seconds.");
    }
    if cli.tokenizer_path.is_none() {
        return usage("AgentX requires --tokenizer-path for Weka trace replay.");
    }
    if cli.model.as_deref().is_none_or(str::is_empty) {
        return usage("--model is required for AgentX.");
    }
    if cli.parallel.iter().any(|&p| p <= 0) {
        return usage("--parallel values must be greater than zero for AgentX.");
    }
    let path = cli
        .url()
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    if cli.api == ApiName::OpenAi && !path.ends_with("/v1/chat/completions") {
        return usage("AgentX requires a URL ending with /v1/chat/completions.");
    }
    Ok(())
}

/// The sessions to replay: the first `trace_limit` in smoke mode, without those that need more context than
/// `max_context_length`.
fn select(sessions: Vec<scenario::weka::Session>, s: &AgentX) -> Result<Vec<Graph>, UsageError> {
    let limit = s.effective_trace_limit().unwrap_or(u64::MAX) as usize;
    let mut graphs: Vec<Graph> = sessions
        .iter()
        .take(limit)
        .enumerate()
        .map(|(i, session)| scenario::dag::build(session, i))
        .collect();
    if let Some(max) = s.max_context_length {
        let before = graphs.len();
        graphs.retain(|g| g.max_context() <= max);
        if graphs.is_empty() {
            return usage(format!(
                "--scenario agentx: no session fits max_context_length {max}"
            ));
        }
        if graphs.len() < before {
            tracing::info!(
                "AgentX: {} session(s) need more than max_context_length {max} tokens and are left out",
                before - graphs.len()
            );
        }
    }
    Ok(graphs)
}

/// `--scenario`: the checked replay (`None` without the flag); `runs` become one per `--parallel` value.
pub(super) fn agentx_plan(
    cli: &Cli,
    runs: &mut Vec<RunSpec>,
) -> Result<Option<Arc<AgentxPlan>>, UsageError> {
    let Some(value) = &cli.scenario.scenario else {
        return Ok(None);
    };
    let s = scenario::config::parse(value)?;
    check_flags(cli, &s)?;
    let provenance = scenario::provenance::resolve(
        s.variant,
        !s.smoke,
        cli.dataset_path.as_deref(),
        cli.data_source.as_deref(),
    )?;
    let sessions = scenario::weka::load(&provenance.trace_file)?;
    let graphs = select(sessions, &s)?;
    let calls: usize = graphs.iter().map(|g| g.nodes.len()).sum();
    let duration_s = cli.duration.unwrap_or(if s.smoke {
        scenario::SMOKE_DURATION_S
    } else {
        scenario::DEFAULT_DURATION_S
    });
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return usage(format!("--duration {duration_s}: must be > 0"));
    }
    *runs = cli
        .parallel
        .iter()
        .map(|&p| RunSpec {
            number: calls as u64,
            load: Load::Closed {
                parallel: std::num::NonZeroUsize::new(p as usize).expect("checked > 0"),
                pacing: None,
            },
            warmup: 0,
            dataset_offset: 0,
            role: RunRole::Agentx { variant: s.variant },
        })
        .collect();
    tracing::info!(
        "AgentX {}: {} session(s), {calls} calls from {}",
        s.variant.as_str(),
        graphs.len(),
        provenance.trace_file.display()
    );
    Ok(Some(Arc::new(AgentxPlan {
        scenario: s,
        provenance,
        graphs,
        duration_s,
        seed: cli.seed.unwrap_or(scenario::DEFAULT_SEED),
    })))
}

/// The run's duration as a [`Duration`].
pub fn agentx_duration(plan: &AgentxPlan) -> Duration {
    Duration::from_secs_f64(plan.duration_s)
}
