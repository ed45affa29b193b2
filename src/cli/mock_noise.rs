//! `--mock-jitter-cv`: noise on the simulator's timings (also a flag of `llmperf serve-mock`).

use clap::Args;

/// The simulator's timing noise.
#[derive(Debug, Clone, Default, Args)]
pub struct MockJitterArgs {
    /// Simulator: multiply each request's TTFT and each token gap by an independent log-normal factor
    /// of mean 1 and this coefficient of variation (0.2: a typical server's spread), seeded by `--seed`;
    /// 0 = exact timings.
    #[arg(
        long,
        value_name = "CV",
        default_value_t = 0.0,
        allow_negative_numbers = true,
        help_heading = "Simulator (--api mock)"
    )]
    pub mock_jitter_cv: f64,
}
