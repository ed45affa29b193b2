//! Why `--ui dashboard` cannot start (a usage error naming the flag).

/// Why [`super::Dashboard::start`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// stderr is redirected.
    #[error(
        "--ui dashboard needs a terminal, and stderr is not one: use --ui simple (the default) when the output is redirected"
    )]
    NotATerminal,
    /// The terminal refused raw mode or the alternate screen.
    #[error("--ui dashboard: cannot take over the terminal: {0}")]
    Terminal(String),
    /// The drawing thread could not be spawned.
    #[error("--ui dashboard: cannot start its thread: {0}")]
    Thread(String),
}
