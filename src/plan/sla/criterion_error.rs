//! Why one `--sla-params` criterion cannot be read: evalscope's messages, which the plan wraps as
//! `--sla-params: NAME: …` (a usage error).

/// A criterion that is not `max`, `min` or an operator with a threshold in the metric's unit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CriterionError {
    /// No `<=`, `>=`, `<` or `>` operator.
    #[error("Invalid SLA param format: {0}. Expected format: \"<=0.02\", \">=0.5\", etc.")]
    Format(String),
    /// The threshold is not a finite number.
    #[error("Invalid target value in SLA param: {0}")]
    Target(String),
    /// The threshold's unit is not the metric's (nor convertible to it).
    #[error("Unit '{suffix}' does not match the unit of this metric ('{unit}'): {text}")]
    Unit {
        /// The unit written after the number.
        suffix: String,
        /// The metric's unit.
        unit: String,
        /// The criterion as written.
        text: String,
    },
}
