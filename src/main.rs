//! The `llmperf` binary: hand argv to the library and exit with the code it maps (0 ok, 1 runtime failure,
//! 2 usage error, 128 + signal when interrupted).

fn main() {
    std::process::exit(llmperf::main_with_args(std::env::args_os().collect()));
}
