//! The simulator's prefix cache ([`super::SimConfig::prefix_cache`]): like a serving engine's automatic
//! prefix caching, it remembers every prompt it served followed by the answer it generated, so a later
//! request that repeats a known prefix — the next turn of a conversation, which resends the history with
//! the assistant's real answer — reports those tokens as `prompt_tokens_details.cached_tokens`.
//!
//! Tokens are the simulator's words (see the module docs of [`super`]); a message's role is part of the
//! key but counts no token. Each prefix is one chained hash, so a lookup walks the request's words once
//! and the cached length is the longest prefix seen before. As a real engine computes at least the last
//! prompt token, at most `prompt_tokens − 1` tokens are reported cached. The cache holds at most
//! [`MAX_ENTRIES`] prefixes and is emptied when full.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use serde_json::Value;

/// Most prefixes remembered before the cache is emptied.
pub const MAX_ENTRIES: usize = 4_000_000;

/// The prefixes seen so far.
#[derive(Debug, Default)]
pub struct PrefixCache {
    seen: Mutex<HashSet<u64>>,
}

/// A prompt's chained prefix hashes: one per word, in order, and the chain's end (after the last marker).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// `hashes[i]`: the hash of the prompt's first `i + 1` words (with the role markers before them).
    pub hashes: Vec<u64>,
    /// The hash after the whole prompt.
    pub end: u64,
}

fn mix(h: u64, part: &str, is_marker: bool) -> u64 {
    let mut s = DefaultHasher::new();
    h.hash(&mut s);
    is_marker.hash(&mut s);
    part.hash(&mut s);
    s.finish()
}

impl Chain {
    fn marker(&mut self, role: &str) {
        self.end = mix(self.end, role, true);
    }

    fn words(&mut self, text: &str) {
        for w in text.split_whitespace() {
            self.end = mix(self.end, w, false);
            self.hashes.push(self.end);
        }
    }

    /// The chain of a chat request's `messages` (text content and text parts).
    pub fn of_messages(messages: &[Value]) -> Chain {
        let mut c = Chain::default();
        for m in messages {
            c.marker(m.get("role").and_then(Value::as_str).unwrap_or(""));
            match m.get("content") {
                Some(Value::String(s)) => c.words(s),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        if p.get("type").and_then(Value::as_str) == Some("text") {
                            c.words(p.get("text").and_then(Value::as_str).unwrap_or(""));
                        }
                    }
                }
                _ => {}
            }
        }
        c
    }

    /// The chain of a completions `prompt` (a string, a list of strings, or token ids).
    pub fn of_prompt(prompt: &Value) -> Chain {
        let mut c = Chain::default();
        match prompt {
            Value::String(s) => c.words(s),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => c.words(s),
                        other => c.words(&other.to_string()),
                    }
                }
            }
            _ => {}
        }
        c
    }

    /// The chain of a request body, `None` when it has neither `messages` nor `prompt`.
    pub fn of_body(body: &[u8]) -> Option<(Chain, bool)> {
        let v: Value = serde_json::from_slice(body).ok()?;
        if let Some(Value::Array(m)) = v.get("messages") {
            return Some((Chain::of_messages(m), true));
        }
        v.get("prompt").map(|p| (Chain::of_prompt(p), false))
    }
}

impl PrefixCache {
    /// Forgets every prefix (a server's prefix-cache reset).
    pub fn clear(&self) {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Looks `prompt` up (the cached token count, at most `prompt_words − 1`), then remembers it followed
    /// by the answer (`answer_words` words of `word`, as an assistant message for chat requests).
    pub fn serve(&self, prompt: &Chain, chat: bool, answer_words: u32, word: &str) -> u64 {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let hit = prompt
            .hashes
            .iter()
            .take_while(|h| seen.contains(h))
            .count();
        let cached = hit.min(prompt.hashes.len().saturating_sub(1)) as u64;
        let new = prompt.hashes.len() + answer_words as usize;
        if seen.len() + new > MAX_ENTRIES {
            seen.clear();
        }
        seen.extend(prompt.hashes.iter().copied());
        let mut answer = Chain {
            hashes: Vec::with_capacity(answer_words as usize),
            end: prompt.end,
        };
        if chat {
            answer.marker("assistant");
        }
        for _ in 0..answer_words {
            answer.words(word);
        }
        seen.extend(answer.hashes);
        cached
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_next_turn_hits_the_history_and_the_answer() {
        let cache = PrefixCache::default();
        let turn1 = vec![json!({"role": "user", "content": "a b c"})];
        let c1 = Chain::of_messages(&turn1);
        assert_eq!(cache.serve(&c1, true, 2, "hello"), 0);
        let turn2 = vec![
            json!({"role": "user", "content": "a b c"}),
            json!({"role": "assistant", "content": "hello hello "}),
            json!({"role": "user", "content": "d e"}),
        ];
        let c2 = Chain::of_messages(&turn2);
        assert_eq!(c2.hashes.len(), 7);
        assert_eq!(cache.serve(&c2, true, 1, "hello"), 5);
        // The same prompt again: all but the last token.
        assert_eq!(cache.serve(&c2, true, 1, "hello"), 6);
        // Same words, another role: no hit past the role change.
        let other = vec![json!({"role": "system", "content": "a b c"})];
        assert_eq!(
            cache.serve(&Chain::of_messages(&other), true, 0, "hello"),
            0
        );
    }

    #[test]
    fn prompts_and_parts() {
        let (c, chat) = Chain::of_body(br#"{"prompt": "x y"}"#).unwrap();
        assert!(!chat);
        assert_eq!(c.hashes.len(), 2);
        let parts = json!([{"role": "user", "content": [{"type": "text", "text": "p q"}, {"type": "image_url"}]}]);
        assert_eq!(
            Chain::of_messages(parts.as_array().unwrap()).hashes.len(),
            2
        );
        assert!(Chain::of_body(b"{}").is_none());
    }
}
