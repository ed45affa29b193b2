//! `--repeat` and `--repeat-new-prompts`: every point of the sweep run several times, for intervals over
//! repeats (the layout is in `run_folder`, the summary per point in `runner`).

use clap::Args;

use super::parsers::whole;

/// The heading of the repeat flags.
const HEADING: &str = "Repeats (llmperf)";

/// `--repeat K`, `--repeat-new-prompts`.
#[derive(Debug, Clone, Default, Args)]
pub struct RepeatArgs {
    /// Run every point of the sweep K times (the whole sweep, then again). Repeat 1 is the run root as
    /// usual; repeat k ≥ 2 is a complete run root in `<root>/repeat_<k>/`; each point gets
    /// `<point>_repeats.json` (mean, standard deviation, CV and 95 % t interval of every run-level metric).
    /// `llmperf compare` uses the repeats' spread as run-to-run noise. [default: 1]
    #[arg(long, value_name = "K", value_parser = whole::<u32>, allow_negative_numbers = true, help_heading = HEADING)]
    pub repeat: Option<u32>,

    /// With `--repeat`: give each repeat new prompts (the dataset read on past the sweep) instead of the same
    /// ones. Same prompts: a server's prefix cache may serve repeat 2 onward from cache; new prompts keep
    /// every repeat as cold as the first.
    #[arg(long, help_heading = HEADING)]
    pub repeat_new_prompts: bool,
}
