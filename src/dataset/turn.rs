//! A conversation as the multi-turn datasets give it: a list of [`Turn`]s, each the messages the next
//! request appends to the history (the server's real answers are appended by the conversation driver,
//! never the dataset's).

use serde_json::Value;

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Messages appended to the history before this turn is sent.
    pub messages: Vec<Value>,
    /// This turn's `max_tokens`, overriding `--max-tokens` (trace replays).
    pub max_tokens: Option<u64>,
    /// Seconds to wait before sending this turn (a replayed tool call's latency).
    pub tool_latency_s: Option<f64>,
    /// The conversation's routing key (read from the first turn): each request gets `rid`
    /// `<rid>_t<turn number>` unless its body already has one (`swe_smith`).
    pub rid: Option<String>,
}

impl Turn {
    /// A turn of plain messages.
    pub fn new(messages: Vec<Value>) -> Self {
        Turn {
            messages,
            max_tokens: None,
            tool_latency_s: None,
            rid: None,
        }
    }
}

/// A whole conversation.
pub type Conversation = Vec<Turn>;
