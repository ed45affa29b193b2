//! Why a simulator setting is refused (the caller names the `--mock-*` flag).

/// A simulator setting out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// `--mock-jitter-cv` is not a coefficient of variation from 0 to `max` (`jitter::MAX_CV`).
    #[error("{cv}: must be a coefficient of variation from 0 (no jitter) to {max}")]
    JitterCv {
        /// The value given.
        cv: f64,
        /// The largest accepted.
        max: f64,
    },
}
