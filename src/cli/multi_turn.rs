//! The multi-turn flags (`--multi-turn`, `--min-turns`, `--max-turns`, the deprecated `--multi-turn-args`)
//! and llmperf's `--session-header`, flattened into [`super::Cli`].

use clap::Args;

/// Multi-turn conversation flags, spelled as `evalscope perf` spells them.
#[derive(Debug, Clone, Default, Args)]
pub struct MultiTurnFlags {
    /// Multi-turn conversations: `--number` counts conversations and `--parallel` the conversations in
    /// flight; each turn sends the whole history with the server's real answers. Needs a multi-turn dataset:
    /// `random_multi_turn`, `share_gpt_zh_multi_turn`, `share_gpt_en_multi_turn`, `custom_multi_turn`,
    /// `trie_agentic_coding`, `trie_code_qa`, `trie_office_work`.
    #[arg(long, help_heading = "Multi-turn")]
    pub multi_turn: bool,

    /// Fewest user turns per conversation (`random_multi_turn`).
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        help_heading = "Multi-turn"
    )]
    pub min_turns: i64,

    /// Most user turns per conversation: required by `random_multi_turn`; truncates longer conversations of
    /// the file datasets [default: none].
    #[arg(long, allow_negative_numbers = true, help_heading = "Multi-turn")]
    pub max_turns: Option<i64>,

    /// Deprecated: JSON object folded into `--dataset-args` (keys there win).
    #[arg(long, value_name = "JSON", help_heading = "Multi-turn")]
    pub multi_turn_args: Option<String>,

    /// Send this HTTP header with one stable id per conversation (e.g. `--session-header X-Session-Id`), so
    /// a router that pins sessions to replicas sees every turn of a conversation as one session. Off by
    /// default.
    #[arg(long, value_name = "NAME", help_heading = "Multi-turn")]
    pub session_header: Option<String>,
}
