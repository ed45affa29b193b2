//! `--scenario` (flattened into [`super::Cli`]): evalscope's external performance scenario (`agentx`, or an
//! AgentX JSON object); its data set's hub is the shared `--data-source`.

use clap::Args;

/// `--scenario`.
#[derive(Debug, Clone, Default, Args)]
pub struct ScenarioArgs {
    /// External performance scenario: "agentx" or an AgentX JSON object (e.g.
    /// '{"name":"agentx","mode":"smoke"}'). llmperf replays the AgentX coding-agent traces itself.
    #[arg(long, value_name = "NAME|JSON", help_heading = "Scenario")]
    pub scenario: Option<String>,
}
