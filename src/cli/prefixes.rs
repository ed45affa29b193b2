//! argparse-style abbreviations of long flags, resolved against evalscope's flags first.
//!
//! evalscope's argparse accepts any unambiguous prefix of one of its own flags (`--u` is `--url`, `--se`
//! is `--seed`). llmperf has more flags (`--url-strategy`, `--server-metrics`, `--mock-*`), which would
//! make some of those prefixes ambiguous for clap. So before clap reads the command line, a word that is
//! not an llmperf flag and is an unambiguous prefix of exactly one evalscope flag is rewritten to that
//! flag: an evalscope command line means what it means to evalscope, whatever flags llmperf adds. Other
//! abbreviations are clap's (`infer_long_args`): unambiguous among all of llmperf's flags, or an error.

use std::ffi::OsString;

/// evalscope 1.14.1's long flags (`evalscope perf`, its `perf/arguments.py`, and argparse's `--help`), the
/// list of `tests/fixtures/evalscope_perf_flags.txt` (a test holds them together).
pub const EVALSCOPE_LONG_FLAGS: [&str; 83] = [
    "model",
    "attn-implementation",
    "api",
    "tokenizer-path",
    "url",
    "port",
    "headers",
    "api-key",
    "connect-timeout",
    "read-timeout",
    "total-timeout",
    "no-test-connection",
    "scenario",
    "number",
    "parallel",
    "rate",
    "warmup-num",
    "enable-pd-metrics",
    "open-loop",
    "sleep-interval",
    "duration",
    "sla-auto-tune",
    "sla-variable",
    "sla-params",
    "sla-num-runs",
    "sla-upper-bound",
    "sla-lower-bound",
    "sla-fixed-parallel",
    "sla-number-multiplier",
    "db-commit-interval",
    "queue-size-multiplier",
    "in-flight-task-multiplier",
    "num-workers",
    "log-every-n-query",
    "debug",
    "visualizer",
    "wandb-api-key",
    "swanlab-api-key",
    "swanlab-host",
    "name",
    "alias",
    "enable-progress-tracker",
    "max-prompt-length",
    "min-prompt-length",
    "prefix-length",
    "prefix-count",
    "prompt",
    "query-template",
    "apply-chat-template",
    "no-apply-chat-template",
    "image-width",
    "image-height",
    "image-format",
    "image-num",
    "image-patch-size",
    "outputs-dir",
    "no-timestamp",
    "dataset",
    "dataset-path",
    "data-source",
    "dataset-offset",
    "dataset-args",
    "frequency-penalty",
    "repetition-penalty",
    "logprobs",
    "max-tokens",
    "min-tokens",
    "n-choices",
    "seed",
    "stop",
    "stop-token-ids",
    "stream",
    "no-stream",
    "temperature",
    "top-p",
    "top-k",
    "extra-args",
    "tokenize-prompt",
    "multi-turn",
    "min-turns",
    "max-turns",
    "multi-turn-args",
    "help",
];

/// The evalscope flag `typed` (without `--`) abbreviates: the one evalscope flag it is a proper prefix of.
fn evalscope_flag(typed: &str) -> Option<&'static str> {
    if typed.is_empty() {
        return None;
    }
    let mut matching = EVALSCOPE_LONG_FLAGS
        .iter()
        .filter(|f| f.starts_with(typed) && **f != typed);
    let only = matching.next()?;
    matching.next().is_none().then_some(*only)
}

/// argv (program name first) with every abbreviation of an evalscope flag written out in full, as
/// argparse reads it; `longs` are llmperf's own long flags and aliases (an exact one is never rewritten).
/// Words after `--` are left alone.
pub fn resolve_evalscope_prefixes(args: Vec<OsString>, longs: &[&str]) -> Vec<OsString> {
    let mut rest = false;
    args.into_iter()
        .enumerate()
        .map(|(i, arg)| {
            if i == 0 || rest {
                return arg;
            }
            let Some(word) = arg.to_str() else {
                return arg;
            };
            if word == "--" {
                rest = true;
                return arg;
            }
            let Some(flag) = word.strip_prefix("--") else {
                return arg;
            };
            let (typed, value) = match flag.split_once('=') {
                Some((t, v)) => (t, Some(v)),
                None => (flag, None),
            };
            if longs.contains(&typed) {
                return arg;
            }
            match (evalscope_flag(typed), value) {
                (Some(full), Some(v)) => OsString::from(format!("--{full}={v}")),
                (Some(full), None) => OsString::from(format!("--{full}")),
                (None, _) => arg,
            }
        })
        .collect()
}

/// The long flags and aliases of `cmd`.
pub fn long_flags(cmd: &clap::Command) -> Vec<&str> {
    cmd.get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().into_iter().flatten())
        })
        .chain(["help", "version"])
        .collect()
}

/// Parses the flat command line (argv, program name first) as evalscope would read its abbreviations.
pub fn parse_flat(args: Vec<OsString>) -> Result<super::Cli, clap::Error> {
    let cmd = <super::Cli as clap::CommandFactory>::command();
    let args = resolve_evalscope_prefixes(args, &long_flags(&cmd));
    <super::Cli as clap::Parser>::try_parse_from(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;

    fn argv(line: &str) -> Vec<OsString> {
        std::iter::once("llmperf")
            .chain(line.split_whitespace())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_list_is_the_fixture() {
        let fixture: Vec<&str> = include_str!("../../tests/fixtures/evalscope_perf_flags.txt")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(' ').next()?.strip_prefix("--"))
            .collect();
        let ours: Vec<&str> = EVALSCOPE_LONG_FLAGS
            .iter()
            .copied()
            .filter(|f| *f != "help")
            .collect();
        assert_eq!(ours, fixture);
    }

    /// Every abbreviation argparse resolves to an evalscope flag reaches the same flag in llmperf, whatever
    /// flags llmperf adds (`--u` with `--url-strategy`, `--mo` with the `--mock-*` flags, `--se` with
    /// `--server-metrics`).
    #[test]
    fn every_evalscope_abbreviation_means_the_same_flag() {
        let cmd = Cli::command();
        let longs = long_flags(&cmd);
        let mut checked = 0;
        for full in EVALSCOPE_LONG_FLAGS.iter().filter(|f| **f != "help") {
            for cut in 1..full.len() {
                let typed = &full[..cut];
                if evalscope_flag(typed) != Some(full) {
                    continue;
                }
                let resolved = resolve_evalscope_prefixes(argv(&format!("--{typed}")), &longs);
                let expected = if longs.contains(&typed) {
                    format!("--{typed}")
                } else {
                    format!("--{full}")
                };
                assert_eq!(resolved[1], OsString::from(expected), "--{typed}");
                assert!(
                    longs.contains(full),
                    "evalscope's --{full} is an llmperf flag"
                );
                checked += 1;
            }
        }
        assert!(checked > 300, "{checked} abbreviations");
        // Through the parser: the values land on evalscope's flags.
        let cli = parse_flat(argv("--u http://h:1/v1 --mo m --se 7 --ra 2 --max-tok 3")).unwrap();
        assert_eq!(cli.url(), "http://h:1/v1");
        assert_eq!(cli.model.as_deref(), Some("m"));
        assert_eq!((cli.seed, cli.rate.clone()), (Some(7), vec![2.0]));
        assert_eq!(cli.max_tokens, [3]);
        let cli = parse_flat(argv("--ur=http://h:2/v1 --url-s random --dry-run")).unwrap();
        assert_eq!(cli.url(), "http://h:2/v1");
        assert_eq!(cli.traffic.url_strategy.as_deref(), Some("random"));
        assert_eq!(cli.traffic.dry_run, Some(10));
        // Ambiguous in evalscope stays ambiguous; after `--` nothing is rewritten.
        assert!(parse_flat(argv("--max 5")).is_err());
        let rest = resolve_evalscope_prefixes(argv("-- --u"), &longs);
        assert_eq!(rest[2], OsString::from("--u"));
    }
}
