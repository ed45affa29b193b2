//! Datasets: turn a prompt source into the per-request inputs, before any request is sent.
//!
//! One file per plugin; this file owns the shared item type, the length filter, the cycling rule for
//! file datasets (items produced up-front, capped at the largest run's request count, then cycled; spec §3)
//! and [`Prompts`], which hands each run its inputs in order, one at a time, to a sink that may stop it —
//! file items cycled, synthetic ones generated per run in batches (so memory holds one batch of
//! intermediate data and no per-request entry, whatever the run's length).

pub mod agentx;
mod bfcl;
mod conversations;
mod embedding;
mod files;
mod hub_files;
mod hub_vision;
pub mod image;
mod line_by_line;
pub mod multi_turn;
mod parquet_rows;
mod prefix;
pub mod random;
pub mod replay_prompt;
mod swe_smith;
mod swe_smith_live;
mod synthetic;
mod text_lines;
mod trie;
mod trie_error;
mod turn;
mod webdataset;

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use crate::plan::{DatasetKind, InputLenMode, PrefixRole, PromptSource, RunPlan, Workload};
use crate::tokenizer::Tokenizer;

/// One request's input, before the API plugin turns it into a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A plain prompt, sent as `{"prompt": …}` (embeddings: `{"input": …}`).
    Text(String),
    /// A message list, sent as `{"messages": […]}`.
    Chat(Vec<Value>),
    /// A whole request body from the dataset; flags only fill the keys it lacks.
    Body(Map<String, Value>),
    /// Token ids, sent as `{"prompt": [ids]}` (`--tokenize-prompt`).
    Tokens(Vec<u32>),
    /// Several strings: an embeddings batch (`{"input": [...]}`).
    Texts(Vec<String>),
    /// A rerank query with its documents.
    Rerank {
        /// The query.
        query: String,
        /// The documents.
        documents: Vec<String>,
    },
}

/// What the plugins share: the chat-template choice, the length bounds and, when given, the tokenizer
/// that measures lengths in tokens.
#[derive(Debug, Clone)]
pub struct Shaper {
    /// Wrap prompts as one user message.
    pub apply_chat_template: bool,
    /// Inclusive `(min, max)` prompt length: tokens with a tokenizer, else characters.
    pub length: (u64, u64),
    /// Measures lengths in tokens (evalscope's `check_prompt_length`).
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// `chat_template_kwargs` used when the length is measured through the chat template.
    pub template_kwargs: Map<String, Value>,
    /// `--dataset-args` `target_input_len` and its companions (needs the tokenizer).
    pub fit: Option<Fit>,
}

/// Fitting prompts to `target_input_len` tokens (evalscope's `fit_text_to_token_len` and prefix
/// injection).
#[derive(Debug, Clone)]
pub struct Fit {
    /// Target tokens.
    pub target: usize,
    /// Shorter prompts: kept (`cap`) or dropped (`drop`).
    pub mode: InputLenMode,
    /// Token ids of `prefix_file`, tiled to fill the prompt up to the target.
    pub prefix_ids: Option<Arc<Vec<u32>>>,
    /// Where the prefix goes.
    pub role: PrefixRole,
}

/// A prompt after fitting: its text and the prefix text to put before it (or in a system message).
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The (possibly cut) prompt.
    pub text: String,
    /// Real-text prefix filling up to the target, when `prefix_file` is set.
    pub prefix: Option<String>,
}

impl Shaper {
    /// A shaper without a tokenizer.
    pub fn chars(apply_chat_template: bool, length: (u64, u64)) -> Self {
        Shaper {
            apply_chat_template,
            length,
            tokenizer: None,
            template_kwargs: Map::new(),
            fit: None,
        }
    }

    /// `target_input_len`: cut longer prompts to the target (decoded without special tokens), keep or
    /// drop shorter ones, and compute the `prefix_file` text that fills up to the target (the budget is
    /// the target minus the fitted text's tokens, re-encoded). `None`: dropped. Without `target_input_len`
    /// this is the length filter. Fails when the tokenizer cannot measure (a chat template it lacks).
    pub fn fit_text(&self, text: &str) -> Result<Option<Fitted>> {
        let (Some(fit), Some(tok)) = (&self.fit, &self.tokenizer) else {
            return Ok(self.fits(text)?.then(|| Fitted {
                text: text.to_string(),
                prefix: None,
            }));
        };
        let ids = tok.encode(text)?;
        let text = if ids.len() > fit.target {
            tok.decode_skip_special(&ids[..fit.target])?
        } else if ids.len() < fit.target && fit.mode == InputLenMode::Drop {
            return Ok(None);
        } else {
            text.to_string()
        };
        let prefix = match &fit.prefix_ids {
            Some(p) => {
                let budget = fit.target.saturating_sub(tok.count(&text)?);
                Some(prefix::fill(tok, p, budget)?).filter(|s| !s.is_empty())
            }
            None => None,
        };
        Ok(Some(Fitted { text, prefix }))
    }

    /// Whether a `prefix_file` is configured (conversations are then fitted whole).
    pub fn has_prefix(&self) -> bool {
        self.fit.as_ref().is_some_and(|f| f.prefix_ids.is_some())
    }

    /// evalscope's `prepare_conversation` (with a `prefix_file`, chat template on): the whole conversation
    /// filled up to `target_input_len` by the prefix (a system message, or before the first message with
    /// `prefix_role` user), its budget counting the bare content tokens of every message. `None`: the
    /// conversation alone is longer than the target, so it is skipped (never cut).
    pub fn fit_conversation(&self, messages: Vec<Value>) -> Result<Option<Vec<Value>>> {
        let (Some(fit), Some(tok)) = (&self.fit, &self.tokenizer) else {
            return Ok(Some(messages));
        };
        let Some(prefix_ids) = &fit.prefix_ids else {
            return Ok(Some(messages));
        };
        let system = fit.role == PrefixRole::System && self.apply_chat_template;
        prefix::fit_conversation(tok, prefix_ids, fit.target, system, messages)
    }

    /// A fitted prompt as an item: the prefix as a system message (`prefix_role` system, chat template on)
    /// or put before the text.
    pub fn wrap_fitted(&self, f: Fitted) -> Item {
        match f.prefix {
            None => self.wrap(&f.text),
            Some(p)
                if self.apply_chat_template
                    && self
                        .fit
                        .as_ref()
                        .is_some_and(|x| x.role == PrefixRole::System) =>
            {
                Item::Chat(vec![
                    json!({"role": "system", "content": p}),
                    json!({"role": "user", "content": f.text}),
                ])
            }
            Some(p) => self.wrap(&format!("{p}{}", f.text)),
        }
    }

    /// The length evalscope checks: characters without a tokenizer; with one, the tokens of the rendered
    /// chat template (when it applies: a tokenizer without one is an error naming the ways out, as in
    /// evalscope) or of the text.
    pub fn measure(&self, text: &str) -> Result<u64> {
        let n = match &self.tokenizer {
            None => text.chars().count(),
            Some(tok) if self.apply_chat_template => tok.chat_token_count(
                &[json!({"role": "user", "content": text})],
                &self.template_kwargs,
            )?,
            Some(tok) => tok.count(text)?,
        };
        Ok(n as u64)
    }

    /// Whether `text` lies within the bounds.
    pub fn fits(&self, text: &str) -> Result<bool> {
        let len = self.measure(text)?;
        Ok(len >= self.length.0 && len <= self.length.1)
    }

    /// evalscope's `prepare_messages`: keep prompts whose length lies in the bounds; wrap them as a user
    /// message when chat templates apply.
    pub fn prepare(&self, text: &str) -> Result<Option<Item>> {
        Ok(self.fit_text(text)?.map(|f| self.wrap_fitted(f)))
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

/// One request's input and the prompt tokens llmperf intends the server to count (known for the synthetic
/// token-exact datasets).
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The input.
    pub item: Item,
    /// Intended prompt tokens, when known.
    pub intended_prompt_tokens: Option<u64>,
}

/// The inputs of every run of a sweep.
pub struct Prompts {
    source: Source,
    /// The tokenizer, when `--tokenizer-path` was given.
    pub tokenizer: Option<Arc<Tokenizer>>,
    tokenize_prompt: bool,
    template_kwargs: Map<String, Value>,
    /// `mooncake_trace` / `burstgpt_trace` / `azure_trace`: the requests built from the plan's trace.
    pub replay: Option<Arc<replay_prompt::Built>>,
}

enum Source {
    /// File items (or the fixed prompt), cycled.
    Items(Vec<Item>),
    /// Generated per run.
    Synthetic(synthetic::Synthetic),
    /// Whole conversations (`--multi-turn`).
    Conversations(multi_turn::ConversationSource),
}

/// `chat_template_kwargs` of `--extra-args` (the variables the server's template gets).
pub fn template_kwargs(plan: &RunPlan) -> Map<String, Value> {
    match plan.params.extra_args.get("chat_template_kwargs") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    }
}

impl Prompts {
    /// Loads the dataset of `plan` (at most `limit` file items). Fails — before any request — on a missing
    /// file, an empty dataset or a tokenizer that cannot serve the dataset.
    pub fn load(
        plan: &RunPlan,
        tokenizer: Option<Arc<Tokenizer>>,
        limit: usize,
    ) -> Result<Prompts> {
        let kwargs = template_kwargs(plan);
        let fit = match (plan.dataset_args.target_input_len, &tokenizer) {
            (Some(target), Some(tok)) => {
                let prefix_ids = match &plan.dataset_args.prefix_file {
                    Some(path) => Some(Arc::new(prefix_ids(path, tok)?)),
                    None => None,
                };
                Some(Fit {
                    target: target as usize,
                    mode: plan.dataset_args.input_len_mode,
                    prefix_ids,
                    role: plan.dataset_args.prefix_role,
                })
            }
            _ => None,
        };
        let shaper = Shaper {
            apply_chat_template: plan.apply_chat_template,
            length: plan.prompt_length,
            tokenizer: tokenizer.clone(),
            template_kwargs: kwargs.clone(),
            fit,
        };
        let source = match (&plan.prompts, &plan.workload) {
            (PromptSource::Dataset { kind, path }, Workload::MultiTurn(settings)) => {
                Source::Conversations(multi_turn::load(
                    plan,
                    settings,
                    *kind,
                    path.as_deref(),
                    &shaper,
                    tokenizer.clone(),
                    limit,
                )?)
            }
            // `--scenario agentx` builds each session's prompts as it replays it.
            (PromptSource::Dataset { .. }, Workload::AgentGraph(_)) => Source::Items(Vec::new()),
            (prompts, _) => {
                Self::single_source(plan, prompts, &shaper, &tokenizer, &kwargs, limit)?
            }
        };
        let replay = match plan.workload.replay() {
            Some(trace) => Some(Arc::new(replay_prompt::build(
                trace,
                &replay_prompt::PromptShape {
                    tokenizer: tokenizer.clone(),
                    chat: plan.apply_chat_template,
                    tokenize_prompt: plan.tokens.tokenize_prompt,
                    template_kwargs: kwargs.clone(),
                    seed: plan.params.seed.unwrap_or_else(rand::random),
                },
            )?)),
            None => None,
        };
        let prompts = Prompts {
            source,
            tokenizer,
            tokenize_prompt: plan.tokens.tokenize_prompt,
            template_kwargs: kwargs,
            replay,
        };
        // `--tokenize-prompt` renders messages through the chat template as each request is made: the first
        // item is tried now, so a template the tokenizer lacks stops the run before anything is sent.
        if let Source::Items(items) = &prompts.source {
            if let Some(first) = items.first() {
                prompts.tokenized(first.clone())?;
            }
        }
        Ok(prompts)
    }

    /// The inputs of a single-request workload (`--prompt`, a file, a synthetic dataset; a replayed trace's
    /// requests come from the plan).
    fn single_source(
        plan: &RunPlan,
        prompts: &PromptSource,
        shaper: &Shaper,
        tokenizer: &Option<Arc<Tokenizer>>,
        kwargs: &Map<String, Value>,
        limit: usize,
    ) -> Result<Source> {
        Ok(match prompts {
            PromptSource::Fixed(text) => Source::Items(vec![shaper.wrap(text)]),
            // Replayed by the runner from the plan's validated trace.
            PromptSource::Dataset {
                kind:
                    DatasetKind::WorkloadTrace
                    | DatasetKind::MooncakeTrace
                    | DatasetKind::BurstGptTrace
                    | DatasetKind::AzureTrace,
                ..
            } => Source::Items(Vec::new()),
            PromptSource::Dataset {
                kind: kind @ (DatasetKind::SpeedBenchmark | DatasetKind::SpeedBenchmarkLong),
                ..
            } => Source::Items(speed_benchmark_items(*kind)),
            PromptSource::Dataset { kind, path } if kind.is_synthetic() => Source::Synthetic(
                synthetic::Synthetic::new(plan, *kind, tokenizer.clone(), kwargs)?,
            ),
            PromptSource::Dataset { kind, path } => {
                let paths = hub_files::local_copy(*kind, path.as_deref(), plan.data_source)?;
                let batch = match kind {
                    DatasetKind::EmbeddingBatch => Some(batch_size(plan)?),
                    _ => None,
                };
                let mut items = Vec::new();
                for path in &paths {
                    let left = limit.saturating_sub(items.len());
                    if left > 0 {
                        items.extend(load_file(*kind, path, shaper, left, batch)?);
                    }
                }
                if items.is_empty() {
                    let shown: Vec<String> =
                        paths.iter().map(|p| p.display().to_string()).collect();
                    bail!(
                    "Dataset is empty! --dataset-path {} gave no prompt within --min-prompt-length {} and --max-prompt-length {}",
                    shown.join(", "),
                    plan.prompt_length.0,
                    plan.prompt_length.1
                );
                }
                Source::Items(items)
            }
        })
    }

    /// Whether any loaded row is a body carrying `tools`, `tool_choice` or `response_format`.
    pub fn mentions_structure(&self) -> bool {
        match &self.source {
            Source::Items(items) => items.iter().any(|i| match i {
                Item::Body(b) => crate::structured::mentions_structure(b),
                _ => false,
            }),
            Source::Synthetic(_) | Source::Conversations(_) => false,
        }
    }

    /// Prompts from ready items (cycled), e.g. for tests.
    pub fn from_items(items: Vec<Item>) -> Prompts {
        Prompts {
            source: Source::Items(items),
            tokenizer: None,
            tokenize_prompt: false,
            template_kwargs: Map::new(),
            replay: None,
        }
    }

    /// Hands the `total` inputs of one run to `sink`, in request order, until it breaks. `dataset_offset`
    /// and `seed` steer the synthetic datasets.
    pub fn for_run(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
        sink: &mut dyn FnMut(Prepared) -> ControlFlow<()>,
    ) -> Result<()> {
        match &self.source {
            Source::Items(items) => {
                for i in 0..total {
                    let item = cycled(items, i).clone();
                    if sink(self.tokenized(item)?).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            Source::Synthetic(s) => s.for_run(total, dataset_offset, seed, sink),
            Source::Conversations(_) => {
                bail!("a multi-turn dataset yields conversations, not requests")
            }
        }
    }

    /// The `total` conversations of one `--multi-turn` run (warmup first).
    pub fn conversations(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
    ) -> Result<Vec<multi_turn::Conversation>> {
        match &self.source {
            Source::Conversations(c) => c.for_run(total, dataset_offset, seed),
            _ => bail!("the dataset yields single requests, not conversations"),
        }
    }

    /// `--tokenize-prompt` on a file item: text and messages become token ids (messages through the chat
    /// template with the generation prompt).
    fn tokenized(&self, item: Item) -> Result<Prepared> {
        let (Some(tok), true) = (&self.tokenizer, self.tokenize_prompt) else {
            return Ok(Prepared {
                item,
                intended_prompt_tokens: None,
            });
        };
        let ids = match &item {
            Item::Text(t) => tok.encode(t)?,
            Item::Chat(messages) => {
                tok.encode(&tok.render_chat(messages, true, &self.template_kwargs)?)?
            }
            _ => {
                return Ok(Prepared {
                    item,
                    intended_prompt_tokens: None,
                })
            }
        };
        let n = ids.len() as u64;
        Ok(Prepared {
            item: Item::Tokens(ids),
            intended_prompt_tokens: Some(n),
        })
    }
}

/// The token ids of `prefix_file`, read once; an empty file (no tokens) is an error, as in evalscope.
fn prefix_ids(path: &Path, tok: &Tokenizer) -> Result<Vec<u32>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--dataset-args prefix_file {}: cannot read", path.display()))?;
    let ids = tok.encode(&text)?;
    if ids.is_empty() {
        bail!(
            "--dataset-args prefix_file {}: the file is empty (no tokens to fill the prompts with)",
            path.display()
        );
    }
    Ok(ids)
}

/// `batch_size` of `--extra-args` (embedding batches), default 8.
pub fn batch_size(plan: &RunPlan) -> Result<usize> {
    match plan.params.extra_args.get("batch_size") {
        None => Ok(8),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(n as usize),
            _ => bail!("--extra-args batch_size {v}: must be an integer ≥ 1"),
        },
    }
}

fn load_file(
    kind: DatasetKind,
    path: &Path,
    shaper: &Shaper,
    limit: usize,
    batch: Option<usize>,
) -> Result<Vec<Item>> {
    if matches!(kind, DatasetKind::Flickr8k) {
        return webdataset::flickr8k(path, limit);
    }
    if matches!(kind, DatasetKind::KontextBench) {
        return hub_vision::kontext_bench(path, limit);
    }
    if matches!(kind, DatasetKind::MmmuMultiImage) {
        return hub_vision::mmmu_multi_image(path, limit);
    }
    let read = || {
        std::fs::read_to_string(path)
            .with_context(|| format!("--dataset-path {}: cannot read the file", path.display()))
    };
    match kind {
        DatasetKind::OpenQa => text_lines::openqa(&read()?, shaper, limit)
            .with_context(|| format!("--dataset openqa: reading {}", path.display())),
        DatasetKind::Custom => text_lines::custom(&read()?, shaper, limit),
        DatasetKind::Bfcl => bfcl::parse(&read()?, limit)
            .with_context(|| format!("--dataset bfcl: reading {}", path.display())),
        DatasetKind::LineByLine => line_by_line::parse(&read()?, shaper, limit)
            .with_context(|| format!("--dataset line_by_line: reading {}", path.display())),
        DatasetKind::Embedding | DatasetKind::EmbeddingBatch => {
            embedding::embedding(path, shaper, limit, batch)
        }
        DatasetKind::Rerank => embedding::rerank(path, limit),
        DatasetKind::LongAlpaca => conversations::longalpaca(path, shaper, limit),
        DatasetKind::ShareGptZh => {
            conversations::share_gpt(path, "common_zh_70k.jsonl", shaper, limit)
        }
        DatasetKind::ShareGptEn => {
            conversations::share_gpt(path, "common_en_70k.jsonl", shaper, limit)
        }
        other => bail!("--dataset {} is not available in this build", other.name()),
    }
}

/// `speed_benchmark(_long)`: `'熵' * L` for each length, twice (one token per character for Qwen
/// tokenizers), as plain prompts for `/v1/completions`.
pub fn speed_benchmark_items(kind: DatasetKind) -> Vec<Item> {
    let lens: &[usize] = if kind == DatasetKind::SpeedBenchmarkLong {
        &[63488, 129024]
    } else {
        &[1, 6144, 14336, 30720]
    };
    lens.iter()
        .flat_map(|&l| {
            let text = "熵".repeat(l);
            [Item::Text(text.clone()), Item::Text(text)]
        })
        .collect()
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
        let s = Shaper::chars(true, (2, 4));
        assert_eq!(s.prepare("a").unwrap(), None);
        assert_eq!(
            s.prepare("héé").unwrap(),
            Some(Item::Chat(vec![json!({"role": "user", "content": "héé"})]))
        );
        assert_eq!(s.prepare("abcde").unwrap(), None);
        let plain = Shaper::chars(false, (2, 4));
        assert_eq!(
            plain.prepare("abc").unwrap(),
            Some(Item::Text("abc".into()))
        );
    }

    #[test]
    fn cycling_wraps_around() {
        let items = vec![Item::Text("a".into()), Item::Text("b".into())];
        assert_eq!(cycled(&items, 3), &Item::Text("b".into()));
    }
}
