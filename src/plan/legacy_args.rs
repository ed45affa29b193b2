//! evalscope 1.14.1's normalisation of the deprecated argument forms, done on the flags before any rule
//! reads them (evalscope's `_normalize_legacy_dataset_args` and the `num_workers` promotion of its
//! `_post_init`), so the rest of the plan and the run's arguments see what evalscope sees:
//!
//! * the keys given in `--multi-turn-args`, `num_workers` aside, are folded into `--dataset-args` (a key
//!   already there wins, with a warning);
//! * `num_workers` in `--dataset-args` (removed from it, which may leave `{}`), else in
//!   `--multi-turn-args`, becomes `--num-workers` unless that flag was given.

use serde_json::{Map, Value};

use super::{usage, UsageError};
use crate::cli::Cli;

/// Normalises `cli`'s `--dataset-args` and `--num-workers` as evalscope does; fails on a
/// `--multi-turn-args` that is not a JSON object or a promoted `num_workers` that is not an integer ≥ 0.
pub(super) fn normalize(cli: &mut Cli) -> Result<(), UsageError> {
    let legacy = match &cli.turns.multi_turn_args {
        None => None,
        Some(text) => Some(parse_multi_turn_args(text)?),
    };
    if let Some(legacy) = &legacy {
        fold(cli, legacy);
    }
    let promoted = match cli.dataset_args.as_mut() {
        Some(args) if args.contains_key("num_workers") => args.shift_remove("num_workers"),
        _ => legacy.as_ref().and_then(|l| l.get("num_workers").cloned()),
    };
    if let Some(value) = promoted {
        tracing::warn!(
            "`num_workers` in dataset/multi-turn args is deprecated. Please use top-level `--num-workers` instead."
        );
        if cli.tuning.num_workers.is_none() {
            match py_int(&value) {
                Some(n) if n >= 0 => cli.tuning.num_workers = Some(n),
                _ => {
                    return usage(format!(
                        "num_workers {value} (in --dataset-args or --multi-turn-args): must be an integer >= 0; better, use --num-workers"
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Python's `int(value)` for a JSON value: an integer, a float truncated toward zero, a boolean, or a string
/// of an integer.
fn py_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && f.abs() < 9.2e18)
                .map(|f| f.trunc() as i64)
        }),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn parse_multi_turn_args(text: &str) -> Result<Map<String, Value>, UsageError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => {
            usage("--multi-turn-args must be a JSON object, e.g. '{\"first_turn_length\": 65000}'")
        }
        Err(e) => usage(format!("Failed to parse --multi-turn-args JSON: {e}")),
    }
}

/// `setdefault` of the legacy keys (not `num_workers`) into `--dataset-args`, when there are any.
fn fold(cli: &mut Cli, legacy: &Map<String, Value>) {
    let keys: Vec<(&String, &Value)> = legacy.iter().filter(|(k, _)| *k != "num_workers").collect();
    if keys.is_empty() {
        return;
    }
    let merged = cli.dataset_args.get_or_insert_with(Map::new);
    let conflicts: Vec<&String> = keys
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| merged.contains_key(*k))
        .collect();
    if !conflicts.is_empty() {
        tracing::warn!(
            "Keys {conflicts:?} were set in both --multi-turn-args and --dataset-args; --dataset-args takes precedence."
        );
    }
    for (k, v) in keys {
        merged.entry(k.clone()).or_insert_with(|| v.clone());
    }
    tracing::warn!("`--multi-turn-args` is deprecated; its values were folded into `--dataset-args`. Please migrate to `--dataset-args`.");
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    fn cli(extra: &[&str]) -> Cli {
        let mut argv = vec!["llmperf", "--model", "m"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap()
    }

    fn normalized(extra: &[&str]) -> Cli {
        let mut c = cli(extra);
        normalize(&mut c).unwrap();
        c
    }

    #[test]
    fn legacy_keys_fold_into_dataset_args_and_dataset_args_win() {
        let c = normalized(&["--multi-turn-args", r#"{"first_turn_length": 100}"#]);
        assert_eq!(
            c.dataset_args,
            Some(
                json!({"first_turn_length": 100})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert_eq!(c.tuning.num_workers, None, "only given keys are folded");
        let c = normalized(&[
            "--dataset-args",
            r#"{"first_turn_length": 999}"#,
            "--multi-turn-args",
            r#"{"first_turn_length": 100, "subsequent_turn_length": 7}"#,
        ]);
        assert_eq!(
            c.dataset_args.unwrap(),
            *json!({"first_turn_length": 999, "subsequent_turn_length": 7})
                .as_object()
                .unwrap()
        );
        assert_eq!(normalized(&[]).dataset_args, None);
    }

    #[test]
    fn num_workers_is_promoted_unless_the_flag_was_given() {
        let c = normalized(&["--multi-turn-args", r#"{"num_workers": 3}"#]);
        assert_eq!(c.tuning.num_workers, Some(3));
        assert_eq!(c.dataset_args, None, "num_workers is never folded");
        let c = normalized(&[
            "--dataset-args",
            r#"{"num_workers": 4, "target_input_len": 100}"#,
        ]);
        assert_eq!(c.tuning.num_workers, Some(4));
        assert_eq!(
            c.dataset_args.unwrap(),
            *json!({"target_input_len": 100}).as_object().unwrap()
        );
        let c = normalized(&["--dataset-args", r#"{"num_workers": 5}"#]);
        assert_eq!(c.dataset_args, Some(Map::new()), "popped, leaving {{}}");
        let c = normalized(&[
            "--num-workers",
            "0",
            "--multi-turn-args",
            r#"{"num_workers": 3}"#,
        ]);
        assert_eq!(c.tuning.num_workers, Some(0), "the flag wins");
        // Python's int(): 3.7 -> 3, "6" -> 6.
        let c = normalized(&["--dataset-args", r#"{"num_workers": 3.7}"#]);
        assert_eq!(c.tuning.num_workers, Some(3));
        let c = normalized(&["--dataset-args", r#"{"num_workers": "6"}"#]);
        assert_eq!(c.tuning.num_workers, Some(6));
        for bad in [r#"{"num_workers": -1}"#, r#"{"num_workers": "x"}"#] {
            let mut c = cli(&["--dataset-args", bad]);
            assert!(normalize(&mut c).unwrap_err().0.contains("num_workers"));
        }
        let mut c = cli(&["--multi-turn-args", "[1]"]);
        assert!(normalize(&mut c).unwrap_err().0.contains("JSON object"));
    }
}
