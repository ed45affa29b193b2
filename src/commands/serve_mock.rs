//! `llmperf serve-mock`: the built-in simulator as a standalone server, for tests and demos that need an
//! endpoint in a process of its own (a Slurm job array, a second terminal). It listens on 127.0.0.1, prints
//! its base URL as the first line of stdout, and serves until SIGINT/SIGTERM (or, with
//! `--until-stdin-closes`, until its stdin closes).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, Parser};

use super::Subcommand;
use crate::error::Error;
use crate::sim::{FaultRule, SimConfig, SimServer};

pub(super) const COMMAND: Subcommand = Subcommand {
    name: "serve-mock",
    command: <ServeMockArgs as CommandFactory>::command,
    run,
};

/// Serve the built-in OpenAI-compatible simulator on 127.0.0.1 (the one `--api mock` uses) until killed.
/// Prints its base URL (`http://127.0.0.1:PORT/v1`) as the first line of stdout.
#[derive(Debug, Clone, Parser)]
#[command(name = "llmperf serve-mock", max_term_width = 110)]
struct ServeMockArgs {
    /// Time to first token, in milliseconds.
    #[arg(long, default_value_t = 50.0)]
    ttft_ms: f64,

    /// Time between tokens, in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    itl_ms: f64,

    /// Output length of a request that does not force one (`ignore_eos`), within its
    /// `min_tokens`..`max_tokens`.
    #[arg(long, default_value_t = 64)]
    output_tokens: u32,

    /// Worker threads of the simulator's runtime.
    #[arg(long, default_value_t = 1)]
    threads: usize,

    /// Make every EVERY-th request misbehave (as `llmperf --mock-fault`).
    #[arg(long, value_name = "KIND[:EVERY]", num_args = 1.., value_parser = crate::sim::fault::parse_fault_rule)]
    mock_fault: Vec<FaultRule>,

    /// Port to listen on, on 127.0.0.1 (0: any free port). A fixed port stands in for a server a client
    /// expects at a known address (evalscope's `--api local` on `--port`, default 8877).
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Also write the base URL to this file (written whole once the server listens), for scripts.
    #[arg(long, value_name = "PATH")]
    url_file: Option<PathBuf>,

    /// Stop when stdin closes (for a parent process that holds the pipe); otherwise only a signal stops it.
    #[arg(long)]
    until_stdin_closes: bool,

    /// The capacity model (`--mock-max-batch`, `--mock-prefill-tok-per-s`, `--mock-decode-tok-per-s`),
    /// as for `llmperf --api mock`.
    #[command(flatten)]
    capacity: crate::cli::sla::MockCapacityArgs,

    /// `--mock-invalid-output-rate`, as for `llmperf --api mock`.
    #[command(flatten)]
    output: crate::cli::mock_output::MockOutputArgs,

    /// Append one JSON line per request received (its port, path, `model` and request id header) to this
    /// file, as `llmperf --api mock --mock-request-log`.
    #[arg(long, value_name = "PATH")]
    mock_request_log: Option<PathBuf>,

    /// The request id header the request log records (as llmperf's `--request-id-header`).
    #[arg(long, value_name = "NAME", default_value = crate::sim::DEFAULT_REQUEST_ID_HEADER)]
    request_id_header: String,
}

fn millis(flag: &str, v: f64) -> Result<Duration, String> {
    if v >= 0.0 && v.is_finite() {
        Ok(Duration::from_secs_f64(v / 1000.0))
    } else {
        Err(format!("{flag} {v}: must be a number of milliseconds ≥ 0"))
    }
}

/// Runs `llmperf serve-mock` on its argv (`serve-mock` first) until a signal (or stdin's end).
fn run(argv: Vec<std::ffi::OsString>) -> Result<(), Error> {
    let args = ServeMockArgs::try_parse_from(argv)?;
    let ttft = millis("--ttft-ms", args.ttft_ms).map_err(Error::usage)?;
    let itl = millis("--itl-ms", args.itl_ms).map_err(Error::usage)?;
    if args.threads == 0 {
        return Err(Error::usage("--threads must be at least 1"));
    }
    let cfg = SimConfig {
        ttft,
        itl,
        output_tokens: args.output_tokens,
        threads: args.threads,
        record_truth: false,
        faults: args.mock_fault.clone(),
        max_batch: args.capacity.mock_max_batch,
        prefill_tok_per_s: args.capacity.mock_prefill_tok_per_s,
        decode_tok_per_s: args.capacity.mock_decode_tok_per_s,
        invalid_output_rate: args.output.mock_invalid_output_rate,
        request_log: args.mock_request_log.clone(),
        request_id_header: args.request_id_header.clone(),
        ..SimConfig::default()
    };
    crate::clock::init();
    let _ = crate::resources::ensure_file_limit(u64::MAX);
    let sim = SimServer::start_on(cfg, args.port)
        .with_context(|| format!("cannot start the simulator on 127.0.0.1:{}", args.port))?;
    let url = format!("{}/v1", sim.base_url());
    if let Some(path) = &args.url_file {
        let staging = path.with_extension("partial");
        std::fs::write(&staging, format!("{url}\n"))
            .and_then(|()| std::fs::rename(&staging, path))
            .map_err(|e| Error::usage(format!("--url-file {}: {e}", path.display())))?;
    }
    println!("{url}");
    let _ = std::io::stdout().flush();
    let waited = wait_for_stop(args.until_stdin_closes);
    sim.shutdown();
    waited
}

/// Blocks until SIGINT/SIGTERM or, when asked, stdin's end.
fn wait_for_stop(until_stdin_closes: bool) -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot watch SIGTERM")?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = stdin_closed => {}
        }
        Ok(())
    })
}
