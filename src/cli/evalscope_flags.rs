//! argparse's abbreviations, resolved against evalscope's flags first: `evalscope perf` accepts any
//! prefix that names one of its flags alone (`--rep 1.1` is `--repetition-penalty`), so llmperf's own
//! flags (`--repeat`, `--mock-*`) must never make such a prefix ambiguous. Before clap parses the flat
//! command line, a word that is not one of llmperf's flags but a prefix of exactly one evalscope flag
//! becomes that flag; anything else is left to clap (llmperf's own prefixes, real ambiguities).

use std::ffi::OsString;

/// evalscope 1.14.1's long flags (`evalscope perf`'s perf/arguments.py); tests/fixtures lists them with
/// their arities and a test holds the two lists together.
pub const EVALSCOPE_LONG_FLAGS: [&str; 82] = [
    "--model",
    "--attn-implementation",
    "--api",
    "--tokenizer-path",
    "--url",
    "--port",
    "--headers",
    "--api-key",
    "--connect-timeout",
    "--read-timeout",
    "--total-timeout",
    "--no-test-connection",
    "--scenario",
    "--number",
    "--parallel",
    "--rate",
    "--warmup-num",
    "--enable-pd-metrics",
    "--open-loop",
    "--sleep-interval",
    "--duration",
    "--sla-auto-tune",
    "--sla-variable",
    "--sla-params",
    "--sla-num-runs",
    "--sla-upper-bound",
    "--sla-lower-bound",
    "--sla-fixed-parallel",
    "--sla-number-multiplier",
    "--db-commit-interval",
    "--queue-size-multiplier",
    "--in-flight-task-multiplier",
    "--num-workers",
    "--log-every-n-query",
    "--debug",
    "--visualizer",
    "--wandb-api-key",
    "--swanlab-api-key",
    "--swanlab-host",
    "--name",
    "--alias",
    "--enable-progress-tracker",
    "--max-prompt-length",
    "--min-prompt-length",
    "--prefix-length",
    "--prefix-count",
    "--prompt",
    "--query-template",
    "--apply-chat-template",
    "--no-apply-chat-template",
    "--image-width",
    "--image-height",
    "--image-format",
    "--image-num",
    "--image-patch-size",
    "--outputs-dir",
    "--no-timestamp",
    "--dataset",
    "--dataset-path",
    "--data-source",
    "--dataset-offset",
    "--dataset-args",
    "--frequency-penalty",
    "--repetition-penalty",
    "--logprobs",
    "--max-tokens",
    "--min-tokens",
    "--n-choices",
    "--seed",
    "--stop",
    "--stop-token-ids",
    "--stream",
    "--no-stream",
    "--temperature",
    "--top-p",
    "--top-k",
    "--extra-args",
    "--tokenize-prompt",
    "--multi-turn",
    "--min-turns",
    "--max-turns",
    "--multi-turn-args",
];

/// The evalscope flag `word` (`--rep`, `--rep=1.1`) abbreviates when it names no flag of `own` exactly
/// and is a prefix of exactly one evalscope flag.
fn expand(word: &str, own: &[String]) -> Option<String> {
    let (name, value) = match word.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (word, None),
    };
    if !name.starts_with("--") || name.len() <= 2 || own.iter().any(|f| f == name) {
        return None;
    }
    let mut matches = EVALSCOPE_LONG_FLAGS.iter().filter(|f| f.starts_with(name));
    let full = matches.next()?;
    if matches.next().is_some() || *full == name {
        return None;
    }
    Some(match value {
        Some(v) => format!("{full}={v}"),
        None => full.to_string(),
    })
}

/// `args` (argv, program name first) with every abbreviation of an evalscope flag written out in full,
/// up to a bare `--`. `cmd` is the flat command line whose own long flags (and aliases) win when typed
/// exactly.
pub fn resolve_evalscope_prefixes(cmd: &clap::Command, args: Vec<OsString>) -> Vec<OsString> {
    let own: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().into_iter().flatten())
        })
        .map(|l| format!("--{l}"))
        .collect();
    let mut done = false;
    args.into_iter()
        .enumerate()
        .map(|(i, arg)| {
            if i == 0 || done {
                return arg;
            }
            let Some(word) = arg.to_str() else {
                return arg;
            };
            if word == "--" {
                done = true;
                return arg;
            }
            match expand(word, &own) {
                Some(full) => OsString::from(full),
                None => arg,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_expand_only_when_evalscope_has_one_flag_for_them() {
        let own = vec!["--repeat".to_string(), "--stream".to_string()];
        assert_eq!(
            expand("--rep", &own).as_deref(),
            Some("--repetition-penalty")
        );
        assert_eq!(
            expand("--repe=1.1", &own).as_deref(),
            Some("--repetition-penalty=1.1")
        );
        assert_eq!(
            expand("--repeat", &own),
            None,
            "llmperf's own flag, exactly"
        );
        assert_eq!(expand("--stream", &own), None, "exact");
        assert_eq!(expand("--max", &own), None, "ambiguous in evalscope too");
        assert_eq!(expand("--mock-jitter", &own), None, "not evalscope's");
        assert_eq!(expand("value", &own), None);
        assert_eq!(expand("--", &own), None);
    }
}
