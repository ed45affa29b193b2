//! End-to-end tests: the `llmperf` binary against the built-in simulator on 127.0.0.1 (port 0).

mod arrivals;
mod bad_input;
mod commands;
#[path = "../common/mod.rs"]
mod common;
mod diagnostics;
mod dispatch;
mod embeddings;
mod errors;
mod examples;
mod fault_mix;
mod faults;
mod http1;
mod hub_download;
mod interrupt;
mod interrupt_trials;
mod keepalive;
mod kubernetes;
mod media;
mod memory;
mod multi_turn;
mod outputs;
mod parquet_sets;
mod report;
mod requests;
mod secrets;
mod server_metrics;
mod shards;
mod slurm;
mod swe_smith;
mod tls;
mod tokens;
mod visualizer;
mod workload;
mod workload_trace;
