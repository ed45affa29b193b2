//! The synthetic datasets, generated per run: `random` (see [`super::random`]), `random_vl` (random text
//! plus PNG images), `random_embedding(_batch)` and `random_rerank`. The per-request draws are made a
//! window of [`WINDOW`] requests at a time, so a run of any length holds no per-request entry.

use std::ops::ControlFlow;
use std::sync::Arc;

use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::random::{
    default_threads, generate_batched_until, Generated, RandomPrompt, RandomText, Vocab,
};
use super::{Item, Prepared};
use crate::plan::{DatasetKind, ImageSettings, RunPlan};
use crate::tokenizer::Tokenizer;

/// Requests whose draws are made at once.
pub const WINDOW: usize = 4096;

/// A synthetic dataset, ready to generate any run's inputs.
pub struct Synthetic {
    kind: DatasetKind,
    text: Option<RandomText>,
    vocab: Option<Vocab>,
    apply_chat_template: bool,
    template_tokens: u64,
    bounds: (u64, u64),
    batch_size: usize,
    num_documents: usize,
    document_length_ratio: f64,
    image: ImageSettings,
    threads: usize,
}

fn extra_usize(extra: &Map<String, Value>, key: &str, default: usize) -> Result<usize> {
    match extra.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(n as usize),
            _ => bail!("--extra-args {key} {v}: must be an integer ≥ 1"),
        },
    }
}

impl Synthetic {
    /// Checks the settings (tokenizer, chat template, length bounds) before any request.
    pub fn new(
        plan: &RunPlan,
        kind: DatasetKind,
        tokenizer: Option<Arc<Tokenizer>>,
        kwargs: &Map<String, Value>,
    ) -> Result<Synthetic> {
        let Some(tok) = tokenizer else {
            bail!("--dataset {} needs --tokenizer-path", kind.name());
        };
        let vocab = Vocab::new(tok.clone())?;
        let chat = plan.apply_chat_template && !plan.tokens.tokenize_prompt;
        let mut template_tokens = 0;
        let mut text = None;
        if matches!(kind, DatasetKind::Random | DatasetKind::RandomVl) {
            if chat {
                // Rendered with the request's chat_template_kwargs, so the server sees the target length.
                template_tokens =
                    tok.chat_token_count(&[json!({"role": "user", "content": ""})], kwargs)? as u64;
            }
            text = Some(
                RandomText::new(
                    vocab.clone(),
                    plan.prompt_length,
                    template_tokens,
                    plan.tokens.prefix_length,
                    plan.tokens.prefix_count,
                    plan.tokens.tokenize_prompt,
                )?
                .with_hit_rate(plan.server_control.target_hit_rate),
            );
        }
        if kind == DatasetKind::RandomVl && !plan.apply_chat_template {
            tracing::warn!("--dataset random_vl without a chat template sends the text only: images need messages");
        }
        let extra = &plan.params.extra_args;
        let ratio = match extra.get("document_length_ratio") {
            None => 5.0,
            Some(v) => match v.as_f64() {
                Some(r) if r > 0.0 && r.is_finite() => r,
                _ => bail!("--extra-args document_length_ratio {v}: must be a number > 0"),
            },
        };
        Ok(Synthetic {
            kind,
            text,
            vocab: Some(vocab),
            apply_chat_template: plan.apply_chat_template,
            template_tokens,
            bounds: plan.prompt_length,
            batch_size: extra_usize(extra, "batch_size", 8)?,
            num_documents: extra_usize(extra, "num_documents", 10)?,
            document_length_ratio: ratio,
            image: plan.image,
            threads: default_threads(),
        })
    }

    /// Generates one run's `total` inputs in order, until `sink` breaks.
    pub fn for_run(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
        sink: &mut dyn FnMut(Prepared) -> ControlFlow<()>,
    ) -> Result<()> {
        match self.kind {
            DatasetKind::Random | DatasetKind::RandomVl => {
                self.random_text(total, dataset_offset, seed, sink)
            }
            DatasetKind::RandomEmbedding
            | DatasetKind::RandomEmbeddingBatch
            | DatasetKind::RandomRerank => self.random_strings(total, seed, sink),
            other => bail!("--dataset {} is not available in this build", other.name()),
        }
    }

    fn random_text(
        &self,
        total: usize,
        dataset_offset: u64,
        seed: u64,
        sink: &mut dyn FnMut(Prepared) -> ControlFlow<()>,
    ) -> Result<()> {
        let Some(text) = &self.text else {
            bail!("random text settings missing");
        };
        let mut stream = text.draw_stream(total, dataset_offset, seed);
        let mut mismatch_sum: i64 = 0;
        let mut image_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1A6E_5EED);
        let mut start = 0;
        while start < total {
            let draws = stream.window(WINDOW);
            let flow = generate_batched_until(
                draws.len(),
                self.threads,
                |j| text.item(&draws, start + j),
                |_, g: Generated| {
                    mismatch_sum += g.mismatch.abs();
                    sink(self.random_input(g, &mut image_rng))
                },
            )?;
            start += draws.len();
            if flow.is_break() {
                break;
            }
        }
        if mismatch_sum > 0 {
            tracing::warn!(
                "Random prompts: {mismatch_sum} token(s) off target in total after decode/re-encode (the tokenizer could not reproduce some lengths exactly)"
            );
        }
        Ok(())
    }

    /// A generated `random` / `random_vl` prompt as the request's input (`random_vl`: with its images,
    /// drawn from `image_rng` in request order).
    fn random_input(&self, g: Generated, image_rng: &mut ChaCha8Rng) -> Prepared {
        let vl = self.kind == DatasetKind::RandomVl;
        match g.prompt {
            RandomPrompt::Ids(ids) => Prepared {
                item: Item::Tokens(ids),
                intended_prompt_tokens: Some(g.target_tokens),
            },
            RandomPrompt::Text(t) if vl && self.apply_chat_template => {
                let mut content = vec![json!({"type": "text", "text": t})];
                for _ in 0..self.image.num {
                    let url = super::image::random_png_data_url(&self.image, image_rng);
                    content.push(json!({"type": "image_url", "image_url": {"url": url}}));
                }
                Prepared {
                    item: Item::Chat(vec![json!({"role": "user", "content": content})]),
                    intended_prompt_tokens: None,
                }
            }
            RandomPrompt::Text(t) if self.apply_chat_template => Prepared {
                item: Item::Chat(vec![json!({"role": "user", "content": t})]),
                intended_prompt_tokens: Some(g.target_tokens + self.template_tokens),
            },
            RandomPrompt::Text(t) => Prepared {
                item: Item::Text(t),
                intended_prompt_tokens: Some(g.target_tokens),
            },
        }
    }

    /// `random_embedding(_batch)` and `random_rerank`: independent random allowed ids of drawn lengths,
    /// converged by decode/re-encode. One stream draws every request's length, then every request's
    /// seed; a copy of it positioned past the lengths draws the seeds alongside, a window at a time.
    fn random_strings(
        &self,
        total: usize,
        seed: u64,
        sink: &mut dyn FnMut(Prepared) -> ControlFlow<()>,
    ) -> Result<()> {
        let (lo, hi) = self.string_bounds();
        let mut lens_rng = ChaCha8Rng::seed_from_u64(seed);
        let mut seeds_rng = lens_rng.clone();
        for _ in 0..total {
            seeds_rng.random_range(lo..hi);
        }
        let mut start = 0;
        while start < total {
            let count = WINDOW.min(total - start);
            let lens: Vec<u64> = (0..count).map(|_| lens_rng.random_range(lo..hi)).collect();
            let seeds: Vec<u64> = (0..count).map(|_| seeds_rng.random()).collect();
            let flow = generate_batched_until(
                count,
                self.threads,
                |j| self.random_string(lens[j] as usize, seeds[j]),
                |_, (item, tokens)| {
                    sink(Prepared {
                        item,
                        intended_prompt_tokens: tokens,
                    })
                },
            )?;
            start += count;
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// The `[lo, hi)` range the string datasets draw lengths from.
    fn string_bounds(&self) -> (u64, u64) {
        let lo = self.bounds.0.max(1);
        let hi = self.bounds.1.max(1) + 1;
        (lo, hi.max(lo + 1))
    }

    /// One `random_embedding(_batch)` / `random_rerank` input of length `len` from its own `seed`, and its
    /// intended token count.
    fn random_string(&self, len: usize, seed: u64) -> Result<(Item, Option<u64>)> {
        let Some(vocab) = &self.vocab else {
            bail!("vocabulary missing");
        };
        let one = |len: usize, rng: &mut ChaCha8Rng| -> Result<String> {
            let ids: Vec<u32> = (0..len).map(|_| vocab.draw(rng)).collect();
            Ok(vocab.converge(ids, len, rng)?.0)
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Ok(match self.kind {
            DatasetKind::RandomEmbedding => (Item::Text(one(len, &mut rng)?), Some(len as u64)),
            DatasetKind::RandomEmbeddingBatch => {
                let texts = (0..self.batch_size)
                    .map(|_| one(len, &mut rng))
                    .collect::<Result<Vec<_>>>()?;
                (Item::Texts(texts), Some((len * self.batch_size) as u64))
            }
            _ => {
                let doc_len = ((len as f64) * self.document_length_ratio) as usize;
                let query = one(len, &mut rng)?;
                let documents = (0..self.num_documents)
                    .map(|_| one(doc_len.max(1), &mut rng))
                    .collect::<Result<Vec<_>>>()?;
                // A rerank server counts each (query, document) pair its own way: no intended count.
                (Item::Rerank { query, documents }, None)
            }
        })
    }
}

#[cfg(test)]
mod tests;
