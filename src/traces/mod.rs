//! Recorded traces, read and checked at plan time (a bad line is a usage error naming it) and replayed by
//! the engine on the open-loop schedule: [`workload_trace`] (evalscope's recorded requests) and
//! [`replay`] (the length-only production traces `mooncake_trace`, `burstgpt_trace`, `azure_trace`, whose
//! prompts `dataset::replay_prompt` synthesizes once the tokenizer is loaded). A leaf: `plan` and
//! `dataset` both read these types.

pub mod error;
pub mod replay;
pub mod workload_trace;
