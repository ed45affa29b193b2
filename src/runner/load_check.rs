//! The load verdict of a run (docs/load-verdict.md): the rule its load and workload call for, judged
//! over the rows it stored ([`crate::metrics::load`]); used for each run of a sweep and SLA search, and
//! for a merged run (over the union of its shards' rows).

use crate::metrics::load::{judge_db, LoadInputs, LoadRule, LoadVerdict, Plateau, PlateauRule};
use crate::plan::{Load, RunSpec};
use crate::run_folder::RunDir;

/// What a run sends, as far as its load rule goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sends {
    /// Single requests (a dataset, `--prompt`, a replayed trace).
    Requests,
    /// `--multi-turn` conversations: `--parallel` and `--number` count conversations.
    Conversations,
    /// AgentX sessions, released by their dependency graphs.
    Sessions,
    /// One shard's share of a sharded plan (judged on the merged run instead).
    ShardShare,
}

/// The rule for a run of `spec` sending `sends`; `ramp_up_s`: `--ramp-up`, if any.
pub fn rule(spec: &RunSpec, sends: Sends, ramp_up_s: Option<f64>) -> LoadRule {
    match (sends, spec.load) {
        (Sends::ShardShare, _) => LoadRule::Unjudged(
            "one shard's share of the load: `llmperf merge` judges the whole run",
        ),
        (Sends::Sessions, _) => LoadRule::Unjudged(
            "agent sessions release their requests along their dependency graphs",
        ),
        (Sends::Conversations, Load::Open { .. } | Load::Trace { .. }) => LoadRule::Unjudged(
            "a multi-turn open loop sends later turns after their answers, not on the schedule",
        ),
        (_, Load::Closed { parallel, pacing }) => match pacing {
            Some(rate) => LoadRule::Paced {
                parallel: parallel.get() as u64,
                rate: rate.per_s(),
                ramp_up_s,
            },
            None => LoadRule::Closed {
                parallel: parallel.get() as u64,
                number: spec.number,
                conversations: sends == Sends::Conversations,
            },
        },
        (_, Load::Open { rate }) => LoadRule::Open {
            rate: rate.per_s(),
            ramp_up_s,
        },
        (_, Load::Trace { .. }) => LoadRule::Trace,
    }
}

/// The load verdict and the plateau of the run in `dir`, over its stored rows, read once (both `None`, with a
/// warning, when they cannot be read). `warmup_spans`: the warmup requests' send and end times (they share
/// the cap).
pub fn judge_run(
    dir: &RunDir,
    rules: (LoadRule, PlateauRule),
    client_limits: Vec<String>,
    warmup_spans: &[(f64, f64)],
) -> (Option<LoadVerdict>, Option<Plateau>) {
    let (rule, plateau_rule) = rules;
    let inputs = LoadInputs {
        rule,
        client_limits,
        warmup_spans: warmup_spans.to_vec(),
    };
    let judged = crate::metrics::sql_stats::open_for_scans(&dir.database())
        .and_then(|conn| judge_db(&conn, &inputs, &plateau_rule).map_err(Into::into));
    match judged {
        Ok((v, plateau)) => {
            if let Some(w) = v.warning() {
                tracing::warn!("{w}");
            }
            (Some(v), Some(plateau))
        }
        Err(e) => {
            tracing::warn!("load verdict and plateau: {e:#}");
            (None, None)
        }
    }
}

/// The plateau rule for a run of `spec` sending `sends` (docs/load-verdict.md); `ramp_s`: `--ramp-up`.
pub fn plateau_rule(spec: &RunSpec, sends: Sends, ramp_s: Option<f64>) -> PlateauRule {
    match (sends, spec.load) {
        (Sends::ShardShare, _) => PlateauRule::Unmeasured(
            "one shard's share of the load: `llmperf merge` measures the whole run",
        ),
        (Sends::Sessions, _) => PlateauRule::Unmeasured(
            "agent sessions release their requests along their dependency graphs",
        ),
        (_, Load::Trace { .. }) => {
            PlateauRule::Unmeasured("trace replay: the trace's own arrival times are the load")
        }
        (Sends::Conversations, Load::Open { .. }) => PlateauRule::Unmeasured(
            "a multi-turn open loop sends later turns after their answers, not on the schedule",
        ),
        (_, Load::Closed { parallel, .. }) => PlateauRule::Closed {
            parallel: parallel.get() as u64,
            number: spec.number,
            conversations: sends == Sends::Conversations,
        },
        (_, Load::Open { .. }) => PlateauRule::Open { ramp_s },
    }
}
