//! The simulator's structured-output knob, `--mock-invalid-output-rate`: flattened into [`super::Cli`]
//! (for `--api mock`) and into `llmperf serve-mock`, so both spell it the same.

use clap::Args;

/// `--mock-invalid-output-rate`.
#[derive(Debug, Clone, Default, Args)]
pub struct MockOutputArgs {
    /// Simulator: share of tool calls and JSON outputs made invalid on purpose (0 to 1): still a call,
    /// with arguments that do not validate (or JSON cut short). Drawn per request, seeded by the
    /// request's `seed` (`--seed`) and its number. E.g. `--mock-invalid-output-rate 0.2`.
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = fraction, help_heading = "Simulator (--api mock)")]
    pub mock_invalid_output_rate: f64,
}

/// A number in [0, 1]; the error names the flag.
fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--mock-invalid-output-rate {s}: must be a number from 0 to 1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_only() {
        assert_eq!(fraction("0.2"), Ok(0.2));
        assert_eq!(fraction("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "nan", "x"] {
            assert!(fraction(bad)
                .unwrap_err()
                .contains("--mock-invalid-output-rate"));
        }
    }
}
