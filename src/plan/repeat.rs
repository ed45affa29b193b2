//! `--repeat K` and `--repeat-new-prompts`: every point of the sweep run K times, the whole sweep once,
//! then again. Repeat k ≥ 2 of a point is a run of its own ([`RunRole::Repeat`]) appended after the sweep;
//! with the same prompts it keeps its point's dataset offset and seed, with new prompts it reads the
//! dataset on past the sweep and takes a seed of its own.

use super::*;

/// The repeats of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeats {
    /// Runs per point (1: no repeats).
    pub count: u32,
    /// `--repeat-new-prompts`.
    pub new_prompts: bool,
}

impl Default for Repeats {
    fn default() -> Self {
        Repeats {
            count: 1,
            new_prompts: false,
        }
    }
}

impl Repeats {
    /// The index that seeds run `run_index` whose role is `role`: a repeat with the same prompts takes its
    /// point's, so it draws the same prompts (and arrival times) as repeat 1.
    pub fn seed_index(&self, role: RunRole, run_index: usize) -> usize {
        match role {
            RunRole::Repeat { point, .. } if !self.new_prompts => point,
            _ => run_index,
        }
    }
}

/// The datasets that draw new prompts from a new offset and seed.
fn draws_prompts(source: &PromptSource) -> bool {
    matches!(
        source,
        PromptSource::Dataset {
            kind: DatasetKind::Random
                | DatasetKind::RandomVl
                | DatasetKind::RandomEmbedding
                | DatasetKind::RandomEmbeddingBatch
                | DatasetKind::RandomRerank
                | DatasetKind::RandomMultiTurn,
            ..
        }
    )
}

/// Checks `--repeat`/`--repeat-new-prompts` and appends repeats 2..=K of every run to `runs`.
pub(super) fn repeats(
    cli: &Cli,
    source: &PromptSource,
    workload: &Workload,
    runs: &mut Vec<RunSpec>,
) -> Result<Repeats, UsageError> {
    let count = cli.repeat.repeat.unwrap_or(1);
    let new_prompts = cli.repeat.repeat_new_prompts;
    if count == 0 {
        return usage("--repeat 0: must be at least 1 (runs per point)");
    }
    if count == 1 {
        if new_prompts {
            return usage("--repeat-new-prompts needs --repeat K with K ≥ 2");
        }
        return Ok(Repeats::default());
    }
    if cli.sla.sla_auto_tune {
        return usage("--repeat does not apply to --sla-auto-tune (it repeats its probes itself: --sla-num-runs); drop one");
    }
    if workload.agentx().is_some() {
        return usage("--repeat does not apply to --scenario agentx: drop it");
    }
    if new_prompts && !draws_prompts(source) {
        let what = match source {
            PromptSource::Fixed(_) => "--prompt sends one prompt every time".to_string(),
            PromptSource::Dataset { .. } => format!(
                "--dataset {} gives the same prompts in every run (as evalscope's sweep does)",
                cli.dataset.as_str()
            ),
        };
        return usage(format!(
            "--repeat-new-prompts: {what}; new prompts per repeat need a generated dataset (random, random_vl, random_multi_turn, random_embedding, random_rerank)"
        ));
    }
    let sweep = runs.clone();
    let mut offset = sweep.last().map_or(cli.dataset_offset, |r| {
        r.dataset_offset.wrapping_add(r.number)
    });
    for repeat in 2..=count {
        for (point, spec) in sweep.iter().enumerate() {
            let mut r = spec.clone();
            r.role = RunRole::Repeat { repeat, point };
            if new_prompts {
                r.dataset_offset = offset;
                offset = offset.wrapping_add(r.number);
            }
            runs.push(r);
        }
    }
    Ok(Repeats { count, new_prompts })
}
