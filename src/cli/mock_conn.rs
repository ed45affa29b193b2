//! The simulator's connection limit, `--mock-max-connections`: flattened into [`super::Cli`] (for
//! `--api mock`) and into `llmperf serve-mock`, so both spell it the same.

use clap::Args;

/// `--mock-max-connections`.
#[derive(Debug, Clone, Default, Args)]
pub struct MockConnArgs {
    /// Simulator: refuse connections beyond N open at once (0 = no limit). A refused connection is
    /// accepted and at once closed with a TCP reset (RST), before the server reads or writes a byte: the
    /// client's request fails with `reset` (or `disconnect`) and no HTTP status, and the load verdict
    /// names the server. E.g. `--mock-max-connections 4`.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = super::whole::<u32>, help_heading = "Simulator (--api mock)")]
    pub mock_max_connections: u32,
}
