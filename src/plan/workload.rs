//! What a plan's runs send, as one type: single requests, conversations, a replayed trace or agent
//! sessions. The flags that pick one refuse the others, so a plan has exactly one.

use std::sync::Arc;

use super::agentx::AgentxPlan;
use super::multi_turn::MultiTurnSettings;
use crate::traces::replay::ReplayTrace;
use crate::traces::workload_trace::TraceRequest;

/// What a run sends. Exactly one per plan: the flags that pick one refuse the others.
#[derive(Debug, Clone)]
pub enum Workload {
    /// One request per prompt of the dataset (or `--prompt`).
    SingleTurn,
    /// `--multi-turn`: conversations, each turn sent after the previous answer; `--number` and
    /// `--parallel` count conversations.
    MultiTurn(MultiTurnSettings),
    /// `--dataset workload_trace`: recorded request bodies replayed at their offsets.
    WorkloadTrace(Arc<Vec<TraceRequest>>),
    /// `--dataset mooncake_trace / burstgpt_trace / azure_trace`: the checked trace, whose prompts are
    /// synthesised once the tokenizer is loaded.
    Replay(Arc<ReplayTrace>),
    /// `--scenario agentx`: recorded agent sessions replayed as dependency graphs.
    AgentGraph(Arc<AgentxPlan>),
}

impl Workload {
    /// The multi-turn settings, for a multi-turn workload.
    pub fn multi_turn(&self) -> Option<&MultiTurnSettings> {
        match self {
            Workload::MultiTurn(s) => Some(s),
            _ => None,
        }
    }

    /// The AgentX replay, for an agent-graph workload.
    pub fn agentx(&self) -> Option<&Arc<AgentxPlan>> {
        match self {
            Workload::AgentGraph(a) => Some(a),
            _ => None,
        }
    }

    /// The recorded requests, for a `workload_trace` workload.
    pub fn workload_trace(&self) -> Option<&Arc<Vec<TraceRequest>>> {
        match self {
            Workload::WorkloadTrace(t) => Some(t),
            _ => None,
        }
    }

    /// The trace whose prompts are synthesised, for a replay workload.
    pub fn replay(&self) -> Option<&Arc<ReplayTrace>> {
        match self {
            Workload::Replay(r) => Some(r),
            _ => None,
        }
    }

    /// Conversations, replayed traces and agent sessions repeat earlier prompt text: a server with a prefix
    /// cache serves part of it from the cache.
    pub fn repeats_prefixes(&self) -> bool {
        !matches!(self, Workload::SingleTurn | Workload::WorkloadTrace(_))
    }
}
