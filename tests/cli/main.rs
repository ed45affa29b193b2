//! End-to-end tests: the `llmperf` binary against the built-in simulator on 127.0.0.1 (port 0).

mod common;
mod embeddings;
mod errors;
mod interrupt;
mod media;
mod outputs;
mod requests;
mod tokens;
