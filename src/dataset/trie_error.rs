//! Why one trie trace (`dataset/trie.rs`) is malformed: the warning that skips it names the line and
//! this reason, as evalscope does.

/// What is wrong with one trace line.
#[derive(Debug, thiserror::Error)]
pub enum TrieTraceError {
    /// The line is not JSON.
    #[error("{0}")]
    Json(String),
    /// A required key is absent or of the wrong type.
    #[error("missing or bad {0:?}")]
    Key(&'static str),
    /// The per-turn lists are not `num_turns` long.
    #[error(
        "trace length mismatch: num_turns={turns}, len(assistant_response_length)={responses}, len(tool_call_output_length)={tool_outputs}, len(tool_call_latency)={latencies}"
    )]
    LengthMismatch {
        /// `num_turns`.
        turns: usize,
        /// `len(assistant_response_length)`.
        responses: usize,
        /// `len(tool_call_output_length)`.
        tool_outputs: usize,
        /// `len(tool_call_latency)`.
        latencies: usize,
    },
    /// One entry of a per-turn list is not a (non-negative) number.
    #[error("bad {list}[{index}]")]
    Entry {
        /// The list's key.
        list: &'static str,
        /// The entry's index.
        index: usize,
    },
    /// No text of the recorded length could be synthesized.
    #[error("{0}")]
    Synth(String),
}
