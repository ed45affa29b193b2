//! The flags of a realistic traffic mix, flattened into [`super::Cli`]: several models or LoRA adapters
//! (`--lora-modules`, `--lora-assignment`), several endpoints (`--url-strategy` with a repeated `--url`),
//! the per-request id header (`--request-id-header`, `--no-request-id`) and the dry run (`--dry-run`,
//! `--dry-run-file`). Raw values only; [`crate::plan`] checks them against each other and the rest.
//!
//! None of these is an evalscope flag. An abbreviation evalscope resolves to one of its flags still means
//! that flag (`--u` is `--url`, not ambiguous with `--url-strategy`): see [`super::prefixes`]. The others
//! begin with words that are ambiguous in evalscope 1.14.1 already (`--lo`, `--re`, `--d`, `--no-`).

use std::path::PathBuf;

use clap::Args;

use super::whole;

/// The `--help` heading of these flags.
const HEADING: &str = "Traffic mix";

/// `--lora-assignment` values.
pub const LORA_ASSIGNMENTS: [&str; 3] = ["random", "round-robin", "weighted"];

/// `--url-strategy` values.
pub const URL_STRATEGIES: [&str; 3] = ["round-robin", "random", "least-inflight"];

/// Model and adapter mixes, several endpoints, request ids, the dry run.
#[derive(Debug, Clone, Default, Args)]
pub struct TrafficArgs {
    /// Send each request to one of these models instead of `--model` (LoRA adapters the server has
    /// loaded, or several served models): `NAME` or `NAME=WEIGHT` (weights > 0, normalised). Drawn per
    /// request from the run's seed, the same in every shard; one per conversation with `--multi-turn` and
    /// per session with `--scenario agentx`. Repeatable (adds up). `--model` still names the output folder,
    /// the connection test's model and the tokenizer. E.g. `--lora-modules sql-lora=0.5 chat-lora=0.3
    /// base=0.2`.
    #[arg(long, value_name = "NAME[=WEIGHT]", num_args = 1.., help_heading = HEADING)]
    pub lora_modules: Vec<String>,

    /// How `--lora-modules` are assigned to requests: `random` (uniform), `round-robin` (in request order)
    /// or `weighted` (by the weights) [default: weighted when a weight is given, else random].
    #[arg(long, value_name = "HOW", value_parser = LORA_ASSIGNMENTS, help_heading = HEADING)]
    pub lora_assignment: Option<String>,

    /// Send to every `--url` given (repeat `--url`), one endpoint per request: `round-robin`, `random`, or
    /// `least-inflight` (the endpoint with the fewest requests in flight; one whose connection just failed
    /// is skipped for a second). A conversation or session stays on one endpoint. Without this flag a
    /// repeated `--url` keeps the last one, as in evalscope.
    #[arg(long, value_name = "STRATEGY", value_parser = URL_STRATEGIES, help_heading = HEADING)]
    pub url_strategy: Option<String>,

    /// Name of the header carrying each request's unique id (stored in the database's `request_id`
    /// column) [default: X-Request-Id].
    #[arg(long, value_name = "NAME", help_heading = HEADING)]
    pub request_id_header: Option<String>,

    /// Send no request id header (the `request_id` column stays NULL but for a replayed trace's own ids,
    /// as in evalscope).
    #[arg(long, help_heading = HEADING)]
    pub no_request_id: bool,

    /// Build the plan and the first N request bodies of each run [default N: 10] and print a summary
    /// (prompt lengths, models, endpoints, the arrival schedule in open loop); write the bodies as JSON
    /// lines to `--dry-run-file` or stdout. Sends nothing, starts no simulator or server, writes no run
    /// folder.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "10", value_parser = whole::<u64>, help_heading = HEADING)]
    pub dry_run: Option<u64>,

    /// With `--dry-run`: write the bodies (JSON lines) to this file instead of stdout.
    #[arg(long, value_name = "PATH", help_heading = HEADING)]
    pub dry_run_file: Option<PathBuf>,

    /// Simulator: append one JSON line per request received (its port, path, `model` and id header) to
    /// this file (`llmperf serve-mock --mock-request-log` too).
    #[arg(long, value_name = "PATH", help_heading = "Simulator (--api mock)")]
    pub mock_request_log: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("llmperf").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn dry_run_takes_an_optional_count() {
        assert_eq!(parse(&[]).traffic.dry_run, None);
        assert_eq!(parse(&["--dry-run"]).traffic.dry_run, Some(10));
        assert_eq!(
            parse(&["--dry-run", "--model", "m"]).traffic.dry_run,
            Some(10)
        );
        assert_eq!(parse(&["--dry-run", "3"]).traffic.dry_run, Some(3));
    }

    #[test]
    fn lora_modules_add_up_and_urls_are_all_kept() {
        let cli = parse(&[
            "--lora-modules",
            "a=2",
            "b",
            "--lora-modules",
            "c=1",
            "--url",
            "http://x:1/v1",
            "--url",
            "http://y:2/v1",
        ]);
        assert_eq!(cli.traffic.lora_modules, ["a=2", "b", "c=1"]);
        assert_eq!(cli.urls, ["http://x:1/v1", "http://y:2/v1"]);
        assert_eq!(cli.url(), "http://y:2/v1", "the last --url, as argparse");
    }
}
