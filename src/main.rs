//! The `llmperf` binary: parse argv, run, exit with a meaningful code (0 ok, 1 runtime failure, 2 usage
//! error, 130/143 interrupted).

use clap::Parser;

fn main() {
    if let Some(code) = llmperf::subcommands::dispatch(&std::env::args_os().collect::<Vec<_>>()) {
        std::process::exit(code);
    }
    let cli = llmperf::cli::Cli::parse();
    std::process::exit(llmperf::run(cli));
}
