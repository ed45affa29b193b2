//! `--scenario` and `--data-source` (flattened into [`super::Cli`]): evalscope's external performance
//! scenario (`agentx`, or an AgentX JSON object) and the hub its data set comes from.

use clap::Args;

/// `--scenario`, `--data-source`.
#[derive(Debug, Clone, Default, Args)]
pub struct ScenarioArgs {
    /// External performance scenario: "agentx" or an AgentX JSON object (e.g.
    /// '{"name":"agentx","mode":"smoke"}'). llmperf replays the AgentX coding-agent traces itself.
    #[arg(long, value_name = "NAME|JSON", help_heading = "Scenario")]
    pub scenario: Option<String>,

    /// Where a hub data set comes from: modelscope [default] or huggingface (`--scenario agentx`).
    #[arg(long, value_name = "HUB", help_heading = "Scenario")]
    pub data_source: Option<String>,
}
