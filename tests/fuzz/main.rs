//! Property-based fuzzing (proptest) of the code that reads untrusted bytes or composes what is sent:
//! the SSE framer, the event parser, the Prometheus text parser and the request-body composer. No input may panic, and each has an
//! oracle: split-invariance and a reference framer, agreement of the fast and generic event paths, a
//! byte-exact Python `json.dumps` reference for bodies.
//!
//! `cargo test` runs each target for `LLMPERF_FUZZ_CASES` cases (default 256); `scripts/fuzz.sh` runs them
//! for a time budget (`LLMPERF_FUZZ_SECONDS`) and prints the executions.

mod bodies;
mod events;
mod harness;
mod json;
mod prometheus;
mod sse;
