//! The prompts of one AgentX session (`--scenario agentx`): each call's prompt is built from its hash ids
//! as a replayed Mooncake request's is ([`super::replay::prompt`]): the same block id gives the same
//! `block_size` tokens, so the calls of a session (and `global` sessions between them) share exactly the
//! prefixes the recording shared, and each prompt has the recorded input length. `max_tokens` is the
//! recorded output length, with `ignore_eos`.
//!
//! Built one session at a time, when a worker starts it: a full trace's prompts would not fit in memory.

use anyhow::Result;
use serde_json::{Map, Value};

use super::replay_prompt::{self as prompt, PromptShape};
use crate::scenario::Graph;
use crate::traces::replay::{Format, ReplayArgs, ReplayRecord, ReplayTrace};

/// Each call's body (before the flags fill the keys it lacks) and the prompt tokens a perfect prefix cache
/// would serve within the session, in call order.
pub struct SessionBodies {
    /// Per call.
    pub bodies: Vec<Map<String, Value>>,
    /// Per call.
    pub implied_cached_tokens: Vec<u64>,
    /// Per call: the prompt tokens intended (with a tokenizer).
    pub intended_prompt_tokens: Vec<Option<u64>>,
}

/// Builds the bodies of `graph`'s calls.
pub fn session_bodies(graph: &Graph, shape: &PromptShape) -> Result<SessionBodies> {
    let trace = ReplayTrace {
        format: Format::Mooncake,
        args: ReplayArgs {
            speed: 1.0,
            match_output_length: true,
            block_size: graph.block_size,
        },
        records: graph
            .nodes
            .iter()
            .map(|n| ReplayRecord {
                offset_s: 0.0,
                input_tokens: n.input_tokens,
                output_tokens: n.output_tokens,
                hash_ids: n.hash_ids.clone(),
            })
            .collect(),
    };
    let built = prompt::build(&trace, shape)?;
    Ok(SessionBodies {
        intended_prompt_tokens: built
            .requests
            .iter()
            .map(|r| r.intended_prompt_tokens)
            .collect(),
        bodies: built.requests.into_iter().map(|r| r.body).collect(),
        implied_cached_tokens: built.implied_cached_tokens,
    })
}
