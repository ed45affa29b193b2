//! The plan of server control (issue 27): `--reset-prefix-cache`, `--server-kind`,
//! `--server-control-best-effort`, `--server-profile*` and `--target-cache-hit-rate`, checked against the
//! rest of the plan (usage errors exit 2 before anything is written).

use super::{usage, DatasetKind, PromptSource, TokenSettings, UsageError};
use crate::cli::Cli;
use crate::server_control::{ProfilePlan, ResetWhen, ServerControlPlan};

/// Validates the flags; `kind` is the dataset's, `multi_turn` whether the run sends conversations.
pub(super) fn server_control_plan(
    cli: &Cli,
    prompts: &PromptSource,
    tokens: &TokenSettings,
    multi_turn: bool,
) -> Result<ServerControlPlan, UsageError> {
    let a = &cli.server_control;
    let profile = profile_plan(cli)?;
    let plan = ServerControlPlan {
        reset: a.reset_prefix_cache,
        kind: a.server_kind,
        best_effort: a.server_control_best_effort,
        profile,
        target_hit_rate: a.target_cache_hit_rate,
    };
    if !plan.calls_server() {
        for (given, flag) in [
            (a.server_kind.is_some(), "--server-kind"),
            (a.server_control_best_effort, "--server-control-best-effort"),
        ] {
            if given {
                return usage(format!(
                    "{flag} applies to --reset-prefix-cache once|each-run and --server-profile: add one, or drop {flag}"
                ));
            }
        }
    }
    if plan.reset != ResetWhen::Never && multi_turn && cli.warmup_num.unwrap_or(0.0) > 0.0 {
        return usage(
            "--reset-prefix-cache with --multi-turn --warmup-num: the reset would come before the warmup conversations; drop --warmup-num",
        );
    }
    if let Some(f) = plan.target_hit_rate {
        let random = matches!(
            prompts,
            PromptSource::Dataset {
                kind: DatasetKind::Random,
                ..
            }
        );
        if !random {
            return usage("--target-cache-hit-rate builds random prompts: it needs --dataset random (and no --prompt)");
        }
        if tokens.prefix_length > 0 || tokens.prefix_count > 1 {
            return usage(format!(
                "--target-cache-hit-rate {f} sets the shared prefix itself: not with --prefix-length or --prefix-count"
            ));
        }
    }
    Ok(plan)
}

fn profile_plan(cli: &Cli) -> Result<Option<ProfilePlan>, UsageError> {
    let a = &cli.server_control;
    if !a.server_profile {
        if a.server_profile_at_inflight.is_some() || a.server_profile_seconds.is_some() {
            return usage(
                "--server-profile-at-inflight and --server-profile-seconds shape --server-profile: add --server-profile",
            );
        }
        return Ok(None);
    }
    if a.server_profile_at_inflight == Some(0) {
        return usage("--server-profile-at-inflight must be at least 1");
    }
    if let Some(s) = a.server_profile_seconds {
        if !(s.is_finite() && s > 0.0) {
            return usage(format!(
                "--server-profile-seconds {s}: must be a number of seconds > 0"
            ));
        }
    }
    Ok(Some(ProfilePlan {
        at_inflight: a.server_profile_at_inflight,
        seconds: a.server_profile_seconds,
    }))
}
