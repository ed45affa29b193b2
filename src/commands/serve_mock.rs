//! `llmperf serve-mock`: the built-in simulator as a standalone server, for tests and demos that need an
//! endpoint in a process of its own (a Slurm job array, a second terminal). It listens on 127.0.0.1, prints
//! its base URL as the first line of stdout, and serves until SIGINT/SIGTERM (or, with
//! `--until-stdin-closes`, until its stdin closes). Its simulator flags are spelled as the main command's
//! `--mock-*` flags (the older `--ttft-ms`, `--itl-ms`, `--output-tokens`, `--threads` stay as aliases).

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
    /// Time to first token, in milliseconds (also `--ttft-ms`).
    #[arg(long, alias = "ttft-ms", default_value_t = 50.0)]
    mock_ttft_ms: f64,

    /// Time between tokens, in milliseconds (also `--itl-ms`).
    #[arg(long, alias = "itl-ms", default_value_t = 10.0)]
    mock_itl_ms: f64,

    /// Output length of a request that does not force one (`ignore_eos`), within its
    /// `min_tokens`..`max_tokens` (also `--output-tokens`).
    #[arg(long, alias = "output-tokens", default_value_t = 64)]
    mock_output_tokens: u32,

    /// Worker threads of the simulator's runtime (also `--threads`).
    #[arg(long, alias = "threads", default_value_t = 1)]
    mock_threads: usize,

    /// Make every EVERY-th request misbehave (as `llmperf --mock-fault`).
    #[arg(long, value_name = "KIND[:EVERY]", num_args = 1.., value_parser = crate::sim::fault::parse_fault_rule)]
    mock_fault: Vec<FaultRule>,

    /// Make `GET /metrics` misbehave (as `llmperf --mock-metrics-fault`): `missing`, `slow` or `garbage`.
    #[arg(long, value_name = "KIND")]
    mock_metrics_fault: Option<crate::sim::MetricsFault>,

    /// Leading output tokens of each chat response sent as `reasoning_content` (as `llmperf
    /// --mock-reasoning-tokens`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    mock_reasoning_tokens: u32,

    /// Count chat and completions prompt tokens with this tokenizer (a folder, a `tokenizer.json` or a hub
    /// id, as `llmperf --tokenizer-path`), chat template included, as a server with it would; without it
    /// one token per word. (`llmperf --api mock --tokenizer-path` does the same for its simulator.)
    #[arg(long, value_name = "PATH|ORG/NAME")]
    tokenizer_path: Option<String>,

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

    /// Log-normal noise on each TTFT and token gap (as `llmperf --mock-jitter-cv`).
    #[command(flatten)]
    jitter: crate::cli::MockJitterArgs,

    /// Refuse connections beyond N open at once with a reset (as `llmperf --mock-max-connections`).
    #[command(flatten)]
    conn: crate::cli::mock_conn::MockConnArgs,

    /// Seed of the `--mock-jitter-cv` draws (the same seed gives every request the same factors).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// `--mock-invalid-output-rate`, as for `llmperf --api mock`.
    #[command(flatten)]
    output: crate::cli::mock_output::MockOutputArgs,

    /// `--mock-prefix-cache [on|off]` (alone: on; default off): report repeated prompt prefixes as cached
    /// tokens, as for `llmperf --api mock`.
    #[command(flatten)]
    cache: crate::cli::server_control::MockCacheArgs,
    /// Append one JSON line per request received (its port, path, `model` and request id header) to this
    /// file, as `llmperf --api mock --mock-request-log`.
    #[arg(long, value_name = "PATH")]
    mock_request_log: Option<PathBuf>,

    /// The request id header the request log records (as llmperf's `--request-id-header`).
    #[arg(long, value_name = "NAME", default_value = crate::sim::DEFAULT_REQUEST_ID_HEADER)]
    request_id_header: String,
}

/// `v` milliseconds as a duration; a usage error naming `flag` when `v` is not a number ≥ 0.
fn millis(flag: &str, v: f64) -> Result<Duration, Error> {
    if v >= 0.0 && v.is_finite() {
        Ok(Duration::from_secs_f64(v / 1000.0))
    } else {
        Err(Error::usage(format!(
            "{flag} {v}: must be a number of milliseconds ≥ 0"
        )))
    }
}

/// Runs `llmperf serve-mock` on its argv (`serve-mock` first) until a signal (or stdin's end).
fn run(argv: Vec<std::ffi::OsString>) -> Result<(), Error> {
    let args = ServeMockArgs::try_parse_from(argv)?;
    let ttft = millis("--mock-ttft-ms", args.mock_ttft_ms)?;
    let itl = millis("--mock-itl-ms", args.mock_itl_ms)?;
    if args.mock_threads == 0 {
        return Err(Error::usage("--mock-threads must be at least 1"));
    }
    let prompt_counter = match &args.tokenizer_path {
        Some(spec) => {
            let tokenizer = crate::tokenizer::Tokenizer::load_from(spec, Default::default())
                .map_err(|e| Error::usage(format!("{e:#}")))?;
            crate::api::usage_fallback::UsageFallback {
                tokenizer: Some(std::sync::Arc::new(tokenizer)),
                image_patch: (224, 224, 28),
                ..Default::default()
            }
            .prompt_counter()
        }
        None => None,
    };
    let jitter = crate::sim::Jitter::new(args.jitter.mock_jitter_cv, args.seed)
        .map_err(|e| Error::usage(format!("--mock-jitter-cv {e}")))?;
    let cfg = SimConfig {
        ttft,
        itl,
        output_tokens: args.mock_output_tokens,
        threads: args.mock_threads,
        record_truth: false,
        faults: args.mock_fault.clone(),
        max_batch: args.capacity.mock_max_batch,
        prefill_tok_per_s: args.capacity.mock_prefill_tok_per_s,
        decode_tok_per_s: args.capacity.mock_decode_tok_per_s,
        metrics_fault: args.mock_metrics_fault,
        reasoning_tokens: args.mock_reasoning_tokens,
        prompt_counter,
        jitter,
        invalid_output_rate: args.output.mock_invalid_output_rate,
        prefix_cache: args.cache.mock_prefix_cache == Some(crate::cli::server_control::OnOff::On),
        request_log: args.mock_request_log.clone(),
        request_id_header: args.request_id_header.clone(),
        max_connections: args.conn.mock_max_connections,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mock_flag_of_the_main_command_exists_here() {
        let here = ServeMockArgs::command();
        let has = |long: &str| here.get_arguments().any(|a| a.get_long() == Some(long));
        let main = crate::cli::Cli::command();
        let mock: Vec<&str> = main
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| l.starts_with("mock-"))
            .collect();
        assert!(mock.len() >= 10, "{mock:?}");
        for long in mock {
            assert!(has(long), "serve-mock lacks --{long}");
        }
    }

    #[test]
    fn the_old_spellings_still_parse() {
        let args = ServeMockArgs::try_parse_from([
            "llmperf serve-mock",
            "--ttft-ms",
            "5",
            "--itl-ms",
            "2",
            "--output-tokens",
            "7",
            "--threads",
            "2",
        ])
        .unwrap();
        assert_eq!(
            (
                args.mock_ttft_ms,
                args.mock_itl_ms,
                args.mock_output_tokens,
                args.mock_threads
            ),
            (5.0, 2.0, 7, 2)
        );
    }
}
