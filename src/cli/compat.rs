//! evalscope compatibility at the flag level: evalscope's engine-tuning flags (accepted, validated as
//! evalscope validates them, recorded in the run's arguments file, with no effect on llmperf's engine), and the
//! hint for evalscope API plugins llmperf has no counterpart for.

use clap::Args;

/// The `--help` heading of the flags that only exist for evalscope compatibility.
const HEADING: &str = "evalscope engine tuning (accepted, no effect on llmperf)";

/// evalscope's Python-engine tuning flags.
#[derive(Debug, Clone, Args)]
pub struct TuningFlags {
    /// evalscope: worker processes that build requests (0 = auto, 1 = serial, > 1 = that many; must be
    /// ≥ 0) [default: 0]. No effect: llmperf builds the request bodies in-process, on one producer
    /// thread a bounded look-ahead ahead of the dispatchers (`swe_smith`'s live conversations before
    /// sending, one after the other).
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = HEADING)]
    pub num_workers: Option<i64>,

    /// evalscope: result queue size = parallel × this (≤ 0 counts as 1). No effect: llmperf's results go
    /// through a bounded channel sized by the engine.
    #[arg(long, value_name = "N", default_value_t = 5, allow_negative_numbers = true, help_heading = HEADING)]
    pub queue_size_multiplier: i64,

    /// evalscope: tasks scheduled at once = parallel × this (≤ 0 counts as 1). No effect: llmperf starts
    /// a request only when one of the `--parallel` slots is free.
    #[arg(long, value_name = "N", default_value_t = 2, allow_negative_numbers = true, help_heading = HEADING)]
    pub in_flight_task_multiplier: i64,
}

/// The heading of the local-server flags.
const LOCAL_HEADING: &str = "Local server (--api local, local_vllm)";

/// evalscope's flags for the server `--api local` / `local_vllm` starts.
#[derive(Debug, Clone, Args)]
pub struct LocalFlags {
    /// Port of the server `--api local` / `local_vllm` starts on 127.0.0.1 (the URL becomes
    /// `http://127.0.0.1:PORT/v1/chat/completions`) [default: 8877].
    #[arg(long, value_name = "PORT", help_heading = LOCAL_HEADING)]
    pub port: Option<u16>,

    /// Attention implementation of the local server, as transformers names it: `eager`, `sdpa`,
    /// `flash_attention_2`, `flash_attention_3` or `flex_attention` (vLLM's `VLLM_ATTENTION_BACKEND`
    /// TORCH_SDPA / FLASH_ATTN / FLEX_ATTENTION, `eager` keeps vLLM's default; llama.cpp's `--flash-attn on`
    /// for the flash ones, else `off`).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(crate::local_server::attn_implementation_names()), help_heading = LOCAL_HEADING)]
    pub attn_implementation: Option<String>,
}

/// The tuning values after evalscope's validators, as a run's arguments record them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// `--num-workers` (0 when not given).
    pub num_workers: u64,
    /// `--queue-size-multiplier`, at least 1.
    pub queue_size_multiplier: u64,
    /// `--in-flight-task-multiplier`, at least 1.
    pub in_flight_task_multiplier: u64,
}

impl TuningFlags {
    /// evalscope's validators: `--num-workers` < 0 is an error, the multipliers are raised to at least 1.
    pub fn validate(&self) -> Result<Tuning, String> {
        let num_workers = match self.num_workers {
            Some(n) if n < 0 => return Err(format!("--num-workers {n}: must be >= 0")),
            Some(n) => n as u64,
            None => 0,
        };
        Ok(Tuning {
            num_workers,
            queue_size_multiplier: self.queue_size_multiplier.max(1) as u64,
            in_flight_task_multiplier: self.in_flight_task_multiplier.max(1) as u64,
        })
    }
}

/// The long flags `arg` (`--max`, `--max=4`) is a prefix of when it names none exactly and more than one
/// (argparse's "ambiguous option"), sorted; `None` otherwise.
pub fn ambiguous_prefix(cmd: &clap::Command, arg: &str) -> Option<Vec<String>> {
    let typed = arg.strip_prefix("--")?.split('=').next()?;
    if typed.is_empty() {
        return None;
    }
    let longs: Vec<&str> = cmd
        .get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().into_iter().flatten())
        })
        .collect();
    if longs.contains(&typed) {
        return None;
    }
    let mut candidates: Vec<String> = longs
        .iter()
        .filter(|l| l.starts_with(typed))
        .map(|l| format!("--{l}"))
        .collect();
    candidates.sort();
    candidates.dedup();
    (candidates.len() > 1).then_some(candidates)
}

/// The flags whose value is one JSON object, where a second occurrence silently replaces the first.
const JSON_OBJECT_FLAGS: [&str; 3] = ["--extra-args", "--dataset-args", "--multi-turn-args"];

/// The JSON-object flags `args` (argv, program name first) gives more than once, with their counts; a
/// long flag is recognised whole or by an unambiguous prefix (`--extra`), as the parser reads it.
pub fn repeated_json_flags(
    cmd: &clap::Command,
    args: &[std::ffi::OsString],
) -> Vec<(&'static str, usize)> {
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let resolve = |word: &str| -> Option<&'static str> {
        let typed = word.strip_prefix("--")?.split('=').next()?;
        let exact = longs.contains(&typed);
        let mut matching = longs.iter().filter(|l| {
            if exact {
                **l == typed
            } else {
                l.starts_with(typed)
            }
        });
        let name = matching.next()?;
        if matching.next().is_some() {
            return None;
        }
        JSON_OBJECT_FLAGS.iter().copied().find(|f| f[2..] == **name)
    };
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for word in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if word == "--" {
            break;
        }
        if let Some(flag) = resolve(word) {
            match counts.iter_mut().find(|(f, _)| *f == flag) {
                Some((_, n)) => *n += 1,
                None => counts.push((flag, 1)),
            }
        }
    }
    counts.retain(|(_, n)| *n > 1);
    counts
}

/// Added to the error for an `--api` name llmperf does not run (evalscope's `custom` is a Python class to
/// subclass, `dashscope` sends no requests in 1.14.1, `systemone`/`autotrust` are decision services):
/// how to shape requests instead.
pub const UNSUPPORTED_API_HINT: &str = ". evalscope's Python API plugins (custom, dashscope, systemone, autotrust) have no counterpart: shape the request body with --query-template (a JSON body; `%m` and `%p` are replaced by the model and the prompt) and --extra-args on --api openai (chat/completions, completions) or --api openai_responses";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("llmperf").chain(args.iter().copied()))
    }

    #[test]
    fn tuning_flags_validate_as_evalscope() {
        let t = parse(&[]).unwrap().tuning.validate().unwrap();
        assert_eq!(
            t,
            Tuning {
                num_workers: 0,
                queue_size_multiplier: 5,
                in_flight_task_multiplier: 2
            }
        );
        let cli = parse(&[
            "--num-workers",
            "3",
            "--queue-size-multiplier",
            "0",
            "--in-flight-task-multiplier",
            "-4",
        ])
        .unwrap();
        let t = cli.tuning.validate().unwrap();
        assert_eq!(
            (
                t.num_workers,
                t.queue_size_multiplier,
                t.in_flight_task_multiplier
            ),
            (3, 1, 1)
        );
        let err = parse(&["--num-workers", "-1"])
            .unwrap()
            .tuning
            .validate()
            .unwrap_err();
        assert!(err.contains("--num-workers"), "{err}");
    }

    #[test]
    fn unambiguous_prefixes_work_and_ambiguous_ones_fail() {
        let cli = parse(&["--max-prompt", "10", "--num-w", "2", "--temp", "0.5"]).unwrap();
        assert_eq!(cli.max_prompt_length, 10);
        assert_eq!(cli.tuning.num_workers, Some(2));
        assert_eq!(cli.temperature, 0.5);
        // Exact names win over longer ones they prefix.
        let cli = parse(&["--stream", "--n-choices", "2"]).unwrap();
        assert!(cli.stream_enabled());
        let err = parse(&["--max", "10"]).unwrap_err().to_string();
        assert!(err.contains("--max"), "{err}");
        let cmd = <Cli as clap::CommandFactory>::command();
        assert_eq!(
            ambiguous_prefix(&cmd, "--max=4").unwrap(),
            ["--max-prompt-length", "--max-tokens", "--max-turns"]
        );
        assert_eq!(ambiguous_prefix(&cmd, "--stream"), None, "an exact name");
        assert_eq!(ambiguous_prefix(&cmd, "--max-tok"), None, "one candidate");
        assert_eq!(ambiguous_prefix(&cmd, "--zzz"), None, "no candidate");
    }

    #[test]
    fn repeated_json_object_flags_are_counted_by_whole_name_or_prefix() {
        let cmd = <Cli as clap::CommandFactory>::command();
        let argv = |line: &str| -> Vec<std::ffi::OsString> {
            std::iter::once("llmperf")
                .chain(line.split(' '))
                .map(Into::into)
                .collect()
        };
        assert_eq!(
            repeated_json_flags(
                &cmd,
                &argv(r#"--extra-args {} --model m --extra {"a":1} --extra-args={}"#)
            ),
            [("--extra-args", 3)]
        );
        assert!(repeated_json_flags(&cmd, &argv("--extra-args {} --dataset-args {}")).is_empty());
        assert_eq!(
            repeated_json_flags(&cmd, &argv("--dataset-args {} --dataset-a {}")),
            [("--dataset-args", 2)]
        );
    }
}
