//! How the simulator counts a request's prompt tokens: by default one token per whitespace-separated word
//! (see the [module docs](super)); with a [`PromptCounter`] (the run's `--tokenizer-path` for `--api mock`,
//! `serve-mock --tokenizer-path`) as a real server with that tokenizer counts them: the chat template
//! rendered with the generation prompt and the body's `chat_template_kwargs`, or the encoded prompt text.
//! Cached tokens of the prefix cache, counted in words, are scaled to the same unit.

use std::fmt;
use std::sync::Arc;

/// The counting function: a raw request body to its prompt tokens (`None`: cannot count it).
type CountFn = dyn Fn(&[u8]) -> Option<u64> + Send + Sync;

/// Counts the prompt tokens of a raw chat or completions request body; `None` falls back to words.
#[derive(Clone)]
pub struct PromptCounter(Arc<CountFn>);

impl PromptCounter {
    /// A counter calling `count` on each chat / completions body.
    pub fn new(count: impl Fn(&[u8]) -> Option<u64> + Send + Sync + 'static) -> Self {
        PromptCounter(Arc::new(count))
    }

    /// The prompt tokens of `body`, if this counter can count them.
    pub fn count(&self, body: &[u8]) -> Option<u64> {
        (self.0)(body)
    }
}

impl fmt::Debug for PromptCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PromptCounter(tokenizer)")
    }
}

/// Two counters are the same when they are the same function.
impl PartialEq for PromptCounter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for PromptCounter {}

/// One request's prompt: its tokens as reported, and its words (the prefix cache's unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PromptCount {
    /// `usage.prompt_tokens`.
    pub tokens: u64,
    /// Whitespace-separated words of the prompt.
    pub words: u64,
}

impl PromptCount {
    /// Counted in words only.
    pub fn words(words: u64) -> Self {
        PromptCount {
            tokens: words,
            words,
        }
    }

    /// `cached_words` of the prompt's words in the unit of `tokens` (rounded down, at most `tokens`).
    pub fn cached_tokens(self, cached_words: u64) -> u64 {
        if self.tokens == self.words || self.words == 0 {
            return cached_words.min(self.tokens);
        }
        let scaled = u128::from(cached_words) * u128::from(self.tokens) / u128::from(self.words);
        (scaled as u64).min(self.tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_words_scale_to_tokens() {
        assert_eq!(PromptCount::words(10).cached_tokens(4), 4);
        let p = PromptCount {
            tokens: 40,
            words: 10,
        };
        assert_eq!(p.cached_tokens(5), 20);
        assert_eq!(p.cached_tokens(10), 40);
        let counter = PromptCounter::new(|body| Some(body.len() as u64));
        assert_eq!(counter.count(b"abc"), Some(3));
        assert_eq!(counter, counter.clone());
        assert_ne!(counter, PromptCounter::new(|_| None));
    }
}
