//! Datasets: turn a prompt source into the list of per-request inputs, before any request is sent.
//!
//! One file per plugin; this file owns the shared item type, the length filter and the cycling rule
//! (items produced up-front, capped at the largest run's request count, then cycled; spec §3).

mod line_by_line;
mod text_lines;

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use crate::plan::{DatasetKind, PromptSource, RunPlan};

/// One request's input, before the API plugin turns it into a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A plain prompt, sent as `{"prompt": …}`.
    Text(String),
    /// A message list, sent as `{"messages": […]}`.
    Chat(Vec<Value>),
    /// A whole request body from the dataset; flags only fill the keys it lacks.
    Body(Map<String, Value>),
}

/// What the plugins share: the chat-template choice and the length bounds.
#[derive(Debug, Clone, Copy)]
pub struct Shaper {
    /// Wrap prompts as one user message.
    pub apply_chat_template: bool,
    /// Inclusive `(min, max)` prompt length in characters.
    pub length: (u64, u64),
}

impl Shaper {
    /// evalscope's `prepare_messages` without a tokenizer: keep prompts whose length in characters lies in
    /// the bounds; wrap them as a user message when chat templates apply.
    pub fn prepare(&self, text: &str) -> Option<Item> {
        let len = text.chars().count() as u64;
        if len < self.length.0 || len > self.length.1 {
            return None;
        }
        Some(self.wrap(text))
    }

    /// The prompt as an item, without filtering.
    pub fn wrap(&self, text: &str) -> Item {
        if self.apply_chat_template {
            Item::Chat(vec![json!({"role": "user", "content": text})])
        } else {
            Item::Text(text.to_string())
        }
    }
}

/// Loads at most `limit` items for `plan`. Fails when the source yields none.
pub fn load(plan: &RunPlan, limit: usize) -> Result<Vec<Item>> {
    let shaper = Shaper {
        apply_chat_template: plan.apply_chat_template,
        length: plan.prompt_length,
    };
    let items = match &plan.prompts {
        PromptSource::Fixed(text) => vec![shaper.wrap(text)],
        PromptSource::Dataset { kind, path } => {
            let items = load_file(*kind, path, &shaper, limit)?;
            if items.is_empty() {
                bail!(
                    "Dataset is empty! --dataset-path {} gave no prompt within --min-prompt-length {} and --max-prompt-length {}",
                    path.display(),
                    plan.prompt_length.0,
                    plan.prompt_length.1
                );
            }
            items
        }
    };
    Ok(items)
}

fn load_file(kind: DatasetKind, path: &Path, shaper: &Shaper, limit: usize) -> Result<Vec<Item>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))?;
    match kind {
        DatasetKind::OpenQa => text_lines::openqa(&text, shaper, limit)
            .with_context(|| format!("--dataset openqa: reading {}", path.display())),
        DatasetKind::Custom => Ok(text_lines::custom(&text, shaper, limit)),
        DatasetKind::LineByLine => line_by_line::parse(&text, shaper, limit)
            .with_context(|| format!("--dataset line_by_line: reading {}", path.display())),
    }
}

/// The item of request `index` when `items` are cycled.
pub fn cycled(items: &[Item], index: usize) -> &Item {
    &items[index % items.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_filters_by_characters_and_wraps() {
        let s = Shaper {
            apply_chat_template: true,
            length: (2, 4),
        };
        assert_eq!(s.prepare("a"), None);
        assert_eq!(
            s.prepare("héé"),
            Some(Item::Chat(vec![json!({"role": "user", "content": "héé"})]))
        );
        assert_eq!(s.prepare("abcde"), None);
        let plain = Shaper {
            apply_chat_template: false,
            ..s
        };
        assert_eq!(plain.prepare("abc"), Some(Item::Text("abc".into())));
    }

    #[test]
    fn cycling_wraps_around() {
        let items = vec![Item::Text("a".into()), Item::Text("b".into())];
        assert_eq!(cycled(&items, 3), &Item::Text("b".into()));
    }
}
