//! llmperf: a fast, truthful load generator for LLM serving endpoints and a drop-in replacement for
//! `evalscope perf`.

pub mod clock;
pub mod metrics;
pub mod pyjson;
pub mod record;
pub mod sim;
