//! The `llmperf` binary.
fn main() {}
