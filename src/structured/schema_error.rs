//! Why a JSON Schema does not compile, or an instance does not conform to it: the validator's reason on
//! one line, which the caller wraps with the tool, the request or the trace line it came from.

/// A schema refused, or an instance that does not validate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not valid JSON Schema (or names an external `$ref`).
    #[error("{0}")]
    Invalid(String),
    /// The instance does not conform; the message names the first place.
    #[error("{0}")]
    Mismatch(String),
}
