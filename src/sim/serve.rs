//! `llmperf serve-mock`: the built-in simulator as a standalone server, for tests and demos that need an
//! endpoint in a process of its own (a Slurm job array, a second terminal). It listens on 127.0.0.1, prints
//! its base URL as the first line of stdout, and serves until SIGINT/SIGTERM (or, with
//! `--until-stdin-closes`, until its stdin closes).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use super::{FaultRule, SimConfig, SimServer};
use crate::{EXIT_FAILURE, EXIT_USAGE};

/// Serve the built-in OpenAI-compatible simulator on 127.0.0.1 (the one `--api mock` uses) until killed.
/// Prints its base URL (`http://127.0.0.1:PORT/v1`) as the first line of stdout.
#[derive(Debug, Clone, Parser)]
#[command(name = "llmperf serve-mock", max_term_width = 110)]
pub struct ServeMockArgs {
    /// Time to first token, in milliseconds.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,

    /// Time between tokens, in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,

    /// Output length of a request that does not force one (`ignore_eos`), within its
    /// `min_tokens`..`max_tokens`.
    #[arg(long, default_value_t = 64)]
    pub output_tokens: u32,

    /// Worker threads of the simulator's runtime.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// Make every EVERY-th request misbehave (as `llmperf --mock-fault`).
    #[arg(long, value_name = "KIND[:EVERY]", num_args = 1.., value_parser = crate::cli::parse_fault_rule)]
    pub mock_fault: Vec<FaultRule>,

    /// Also write the base URL to this file (written whole once the server listens), for scripts.
    #[arg(long, value_name = "PATH")]
    pub url_file: Option<PathBuf>,

    /// Stop when stdin closes (for a parent process that holds the pipe); otherwise only a signal stops it.
    #[arg(long)]
    pub until_stdin_closes: bool,
}

fn millis(flag: &str, v: f64) -> Result<Duration, String> {
    if v >= 0.0 && v.is_finite() {
        Ok(Duration::from_secs_f64(v / 1000.0))
    } else {
        Err(format!("{flag} {v}: must be a number of milliseconds ≥ 0"))
    }
}

/// Runs `llmperf serve-mock` with the arguments after `serve-mock`; returns the exit code.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args = match ServeMockArgs::try_parse_from(
        std::iter::once(std::ffi::OsString::from("llmperf serve-mock")).chain(args.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { 0 };
        }
    };
    let cfg = match (
        millis("--ttft-ms", args.ttft_ms),
        millis("--itl-ms", args.itl_ms),
    ) {
        (Ok(ttft), Ok(itl)) if args.threads > 0 => SimConfig {
            ttft,
            itl,
            output_tokens: args.output_tokens,
            threads: args.threads,
            record_truth: false,
            faults: args.mock_fault.clone(),
            ..SimConfig::default()
        },
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
        _ => {
            eprintln!("error: --threads must be at least 1");
            return EXIT_USAGE;
        }
    };
    crate::clock::init();
    let _ = crate::resources::ensure_file_limit(u64::MAX);
    let sim = match SimServer::start(cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot start the simulator: {e}");
            return EXIT_FAILURE;
        }
    };
    let url = format!("{}/v1", sim.base_url());
    if let Some(path) = &args.url_file {
        let staging = path.with_extension("partial");
        if let Err(e) = std::fs::write(&staging, format!("{url}\n"))
            .and_then(|()| std::fs::rename(&staging, path))
        {
            eprintln!("error: --url-file {}: {e}", path.display());
            return EXIT_USAGE;
        }
    }
    println!("{url}");
    let _ = std::io::stdout().flush();
    let code = wait_for_stop(args.until_stdin_closes);
    sim.shutdown();
    code
}

/// Blocks until SIGINT/SIGTERM (exit 0) or, when asked, stdin's end.
fn wait_for_stop(until_stdin_closes: bool) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    runtime.block_on(async move {
        let stdin_closed = async {
            if until_stdin_closes {
                let _ = tokio::task::spawn_blocking(|| {
                    let mut sink = Vec::new();
                    std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink)
                })
                .await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: cannot watch SIGTERM: {e}");
                    return EXIT_FAILURE;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = stdin_closed => {}
        }
        0
    })
}
