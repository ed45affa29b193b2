//! `random` (spec §3.1): prompts of exact token lengths cut from the tokenizer's vocabulary.
//!
//! * Allowed vocabulary: every id below `len(tokenizer)` except special and byte-fallback tokens, ascending.
//! * Prefix pool: `--prefix-count` random prefixes of `--prefix-length` tokens, request `i` gets
//!   `pool[i % count]`.
//! * `--target-cache-hit-rate F` (instead of the pool): one shared sequence of `hi` allowed ids is drawn,
//!   and request `i` of input length `L` starts with its first `P = 16·round(F·L/16)` ids (whole 16-token
//!   blocks, as vLLM and llama.cpp cache them), then `L − P` ids of its own window. Once the server has
//!   served one request of the longest `P`, every request's first `P` tokens are in its prefix cache, so
//!   the expected share of prompt tokens served from cache is `F` (exactly, with `--tokenize-prompt`;
//!   block rounding moves it by under 8 tokens per request).
//! * Lengths: drawn uniformly from `[lo, hi)`, where with a chat template (and no `--tokenize-prompt`) the
//!   template's own tokens `T` — rendered with the request's `chat_template_kwargs` — are taken off the
//!   `--min/--max-prompt-length` bounds, so the server sees the requested total.
//! * Request `i` is a contiguous window of the allowed vocabulary, `allowed[(offset_i + i + k) % n]`; the
//!   offsets are shifted by `--dataset-offset`, which advances by `--number` between the runs of a sweep.
//! * Without `--tokenize-prompt` the ids are decoded and re-encoded until the text encodes to exactly the
//!   target length (at most 10 corrections: cut the excess, or append random allowed ids drawn from the
//!   request's own seed).
//!
//! Determinism: one ChaCha8 stream per run (seeded from `--seed` and the run index) draws, in evalscope's
//! order, the prefix pool, the lengths, the offsets and one seed per request; each request's corrections use
//! its own seed, so batches can be generated on several threads with the same result as one thread.
//! [`DrawStream`] hands the same draws out a window at a time (three copies of the generator, positioned
//! at the start of the lengths, the offsets and the seeds by one pass over the draws), so a run holds no
//! per-request entry: [`RandomText::draws`] is the whole run at once, kept as the reference.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::tokenizer::Tokenizer;

/// Corrections tried before the convergence loop gives up (evalscope's 10).
const MAX_CORRECTIONS: usize = 10;

/// `--target-cache-hit-rate`: the shared part of a prompt is whole blocks of this many tokens.
pub const BLOCK_TOKENS: u64 = 16;

/// Requests generated per batch (memory stays proportional to one batch).
pub const BATCH: usize = 64;

/// A generated random prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RandomPrompt {
    /// Token ids (`--tokenize-prompt`).
    Ids(Vec<u32>),
    /// Text that encodes to the target length.
    Text(String),
}

/// One generated request input and its intended token count (prefix + input, without the template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The prompt.
    pub prompt: RandomPrompt,
    /// Target tokens: prefix + drawn input length.
    pub target_tokens: u64,
    /// Final `len(encode(text)) - target` (0 when converged; always 0 for ids).
    pub mismatch: i64,
}

/// The vocabulary and the tokenizer the random datasets share.
#[derive(Clone)]
pub struct Vocab {
    /// The tokenizer.
    pub tok: Arc<Tokenizer>,
    /// Allowed ids, ascending.
    pub allowed: Arc<Vec<u32>>,
}

impl Vocab {
    /// The allowed vocabulary of `tok`; fails when it is empty.
    pub fn new(tok: Arc<Tokenizer>) -> Result<Self> {
        let allowed = tok.allowed_ids();
        if allowed.is_empty() {
            bail!(
                "--tokenizer-path {}: no usable (non-special) tokens in the vocabulary",
                tok.source()
            );
        }
        Ok(Vocab {
            tok,
            allowed: Arc::new(allowed),
        })
    }

    /// `len` consecutive allowed ids from position `start`, wrapping around.
    pub fn allowed_window(&self, start: usize, len: usize) -> Vec<u32> {
        let n = self.allowed.len();
        (0..len).map(|k| self.allowed[(start + k) % n]).collect()
    }

    /// A uniformly drawn allowed id.
    pub fn draw(&self, rng: &mut impl Rng) -> u32 {
        self.allowed[rng.random_range(0..self.allowed.len())]
    }

    /// evalscope's convergence loop: decode/re-encode `ids` until the text encodes to `target` tokens,
    /// cutting the excess or appending ids drawn from `rng`. Returns the text and the final mismatch.
    pub fn converge(
        &self,
        mut ids: Vec<u32>,
        target: usize,
        rng: &mut impl Rng,
    ) -> Result<(String, i64)> {
        let mut attempt = 0;
        loop {
            let text = self.tok.decode(&ids)?;
            ids = self.tok.encode(&text)?;
            let mismatch = ids.len() as i64 - target as i64;
            if mismatch == 0 || attempt == MAX_CORRECTIONS {
                return Ok((text, mismatch));
            }
            if mismatch > 0 {
                ids.truncate(target);
            } else {
                for _ in 0..(-mismatch) {
                    ids.push(self.draw(rng));
                }
            }
            attempt += 1;
        }
    }
}

/// The settings of a `random` dataset, fixed for the whole sweep.
#[derive(Clone)]
pub struct RandomText {
    vocab: Vocab,
    /// Input lengths are drawn from `[lo, hi)`.
    lo: u64,
    hi: u64,
    prefix_length: u64,
    prefix_count: u64,
    tokenize_prompt: bool,
    /// `--target-cache-hit-rate`: the share of each prompt taken from the shared sequence.
    hit_rate: Option<f64>,
    /// Precomputed encoding of the vocabulary sequence (text mode, byte-level tokenizers).
    corpus: Option<Arc<corpus::Corpus>>,
}

/// What generating requests `base..base + len` of one run needs.
pub struct RunDraws {
    pool: Arc<Vec<Vec<u32>>>,
    /// The run index of the first request drawn here.
    base: usize,
    input_lens: Vec<u64>,
    offsets: Vec<u64>,
    seeds: Vec<u64>,
}

impl RunDraws {
    /// Requests drawn here.
    pub fn len(&self) -> usize {
        self.input_lens.len()
    }

    /// Whether no request is drawn here.
    pub fn is_empty(&self) -> bool {
        self.input_lens.is_empty()
    }
}

/// One run's draws, a window at a time, the same values as [`RandomText::draws`].
pub struct DrawStream {
    pool: Arc<Vec<Vec<u32>>>,
    lens: ChaCha8Rng,
    offsets: ChaCha8Rng,
    seeds: ChaCha8Rng,
    lo: u64,
    hi: u64,
    /// Allowed vocabulary size.
    n: u64,
    dataset_offset: u64,
    next: usize,
    total: usize,
}

impl DrawStream {
    /// The draws of the next `count` requests (fewer at the end of the run).
    pub fn window(&mut self, count: usize) -> RunDraws {
        let count = count.min(self.total - self.next);
        let base = self.next;
        self.next += count;
        let (lo, hi, n, off) = (self.lo, self.hi, self.n, self.dataset_offset);
        RunDraws {
            pool: self.pool.clone(),
            base,
            input_lens: (0..count).map(|_| self.lens.random_range(lo..hi)).collect(),
            offsets: (0..count)
                .map(|_| (self.offsets.random_range(0..n) + off % n) % n)
                .collect(),
            seeds: (0..count).map(|_| self.seeds.random::<u64>()).collect(),
        }
    }
}

impl RandomText {
    /// Settings for `random`: `bounds` are `--min/--max-prompt-length`, `template_tokens` the chat template's
    /// own tokens (0 when no template applies).
    pub fn new(
        vocab: Vocab,
        bounds: (u64, u64),
        template_tokens: u64,
        prefix_length: u64,
        prefix_count: u64,
        tokenize_prompt: bool,
    ) -> Result<Self> {
        let (min, max) = bounds;
        let lo = min.saturating_sub(template_tokens);
        if min < template_tokens {
            tracing::warn!(
                "--min-prompt-length {min} is below the chat template's own {template_tokens} tokens: drawing input lengths from 0"
            );
        }
        let hi = (max + 1).saturating_sub(template_tokens);
        if hi <= lo {
            bail!(
                "--max-prompt-length {max} leaves no room for a prompt: the chat template alone takes {template_tokens} tokens (raise --max-prompt-length, or pass --no-apply-chat-template)"
            );
        }
        let n = vocab.allowed.len() as f64;
        if prefix_count > 1 && (prefix_length as f64) * n.log2() < (prefix_count as f64).log2() {
            bail!(
                "--prefix-count {prefix_count}: only {n}^{prefix_length} distinct prefixes of --prefix-length {prefix_length} exist"
            );
        }
        tracing::info!("Sampling input lengths from [{lo}, {hi})");
        let corpus = if tokenize_prompt {
            None
        } else {
            let started = std::time::Instant::now();
            let c = corpus::Corpus::build(&vocab, hi as usize)?.map(Arc::new);
            tracing::debug!(
                "random: vocabulary sequence encoded in {:.2} s (fast re-encoding: {})",
                started.elapsed().as_secs_f64(),
                c.is_some()
            );
            c
        };
        Ok(RandomText {
            vocab,
            lo,
            hi,
            prefix_length,
            prefix_count,
            tokenize_prompt,
            hit_rate: None,
            corpus,
        })
    }

    /// `--target-cache-hit-rate F`: prompts share a leading `F` of their tokens (see the module docs).
    pub fn with_hit_rate(mut self, f: Option<f64>) -> Self {
        self.hit_rate = f;
        self
    }

    /// The same settings without the precomputed sequence: every window is decoded and re-encoded whole
    /// (for comparisons).
    pub fn without_fast_path(mut self) -> Self {
        self.corpus = None;
        self
    }

    /// Whether text windows are re-encoded through the precomputed sequence.
    pub fn has_fast_path(&self) -> bool {
        self.corpus.is_some()
    }

    /// `(stitched, whole)` encodings done so far by the fast path (`(0, 0)` without it).
    pub fn fast_path_stats(&self) -> (u64, u64) {
        self.corpus.as_ref().map_or((0, 0), |c| c.stats())
    }

    /// The allowed vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The prefix pool, then per request: input length, window offset (shifted by `dataset_offset`) and
    /// seed, all from one stream seeded with `seed`.
    pub fn draws(&self, total: usize, dataset_offset: u64, seed: u64) -> RunDraws {
        self.draw_stream(total, dataset_offset, seed).window(total)
    }

    /// [`Self::draws`] a window at a time: the prefix pool is drawn here, and the stream is positioned at
    /// the start of each per-request section by drawing (and dropping) the lengths and the offsets once.
    pub fn draw_stream(&self, total: usize, dataset_offset: u64, seed: u64) -> DrawStream {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = self.vocab.allowed.len() as u64;
        let pool = self.prefix_pool(&mut rng);
        let lens = rng.clone();
        for _ in 0..total {
            rng.random_range(self.lo..self.hi);
        }
        let offsets = rng.clone();
        for _ in 0..total {
            rng.random_range(0..n);
        }
        DrawStream {
            pool: Arc::new(pool),
            lens,
            offsets,
            seeds: rng,
            lo: self.lo,
            hi: self.hi,
            n,
            dataset_offset,
            next: 0,
            total,
        }
    }

    /// `--prefix-count` distinct prefixes of `--prefix-length` allowed ids.
    fn prefix_pool(&self, rng: &mut ChaCha8Rng) -> Vec<Vec<u32>> {
        let n = self.vocab.allowed.len() as u64;
        let mut pool: Vec<Vec<u32>> = Vec::new();
        if self.hit_rate.is_some() {
            // One shared sequence as long as the longest input.
            pool.push(
                (0..self.hi)
                    .map(|_| self.vocab.allowed[rng.random_range(0..n) as usize])
                    .collect(),
            );
            return pool;
        }
        if self.prefix_length > 0 {
            for _ in 0..self.prefix_count {
                let mut idx: Vec<u64> = (0..self.prefix_length)
                    .map(|_| rng.random_range(0..n))
                    .collect();
                // Collisions: count up like a base-n number until the prefix is new.
                while pool.iter().any(|p| {
                    p.iter()
                        .zip(&idx)
                        .all(|(a, &b)| *a == self.vocab.allowed[b as usize])
                }) {
                    for d in idx.iter_mut().rev() {
                        *d = (*d + 1) % n;
                        if *d != 0 {
                            break;
                        }
                    }
                }
                pool.push(
                    idx.iter()
                        .map(|&i| self.vocab.allowed[i as usize])
                        .collect(),
                );
            }
        }
        pool
    }

    /// Request `i` of a run (`d` holds its draws).
    pub fn item(&self, d: &RunDraws, i: usize) -> Result<Generated> {
        let allowed = &self.vocab.allowed;
        let n = allowed.len() as u64;
        let j = i - d.base;
        let mut len = d.input_lens[j];
        let prefix: &[u32] = match self.hit_rate {
            Some(f) => {
                let shared =
                    (BLOCK_TOKENS * (f * len as f64 / BLOCK_TOKENS as f64).round() as u64).min(len);
                len -= shared;
                &d.pool[0][..shared as usize]
            }
            None if d.pool.is_empty() => &[],
            None => &d.pool[i % d.pool.len()],
        };
        let start = (d.offsets[j] + i as u64 % n) % n;
        let mut ids = Vec::with_capacity(prefix.len() + len as usize);
        ids.extend_from_slice(prefix);
        ids.extend((0..len).map(|k| allowed[((start + k % n) % n) as usize]));
        let target = prefix.len() + len as usize;
        if self.tokenize_prompt {
            return Ok(Generated {
                prompt: RandomPrompt::Ids(ids),
                target_tokens: target as u64,
                mismatch: 0,
            });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(d.seeds[j]);
        let (text, mismatch) = match &self.corpus {
            Some(c) => c.converge(prefix, start as usize, len as usize, target, &mut rng)?,
            None => self.vocab.converge(ids, target, &mut rng)?,
        };
        Ok(Generated {
            prompt: RandomPrompt::Text(text),
            target_tokens: target as u64,
            mismatch,
        })
    }
}

/// Runs `make(i)` for `i` in `0..total` on up to `threads` threads, in batches of [`BATCH`] per thread, and
/// hands the results to `sink` in index order. Within a batch the threads take the next index as they
/// finish (a thread slowed by other work on the machine does not hold the others up), and the previous
/// batch goes to `sink` while the next one is generated: memory holds two batches of results at most.
pub fn generate_batched<T: Send>(
    total: usize,
    threads: usize,
    make: impl Fn(usize) -> Result<T> + Sync,
    mut sink: impl FnMut(usize, T),
) -> Result<()> {
    generate_batched_until(total, threads, make, |i, t| {
        sink(i, t);
        ControlFlow::Continue(())
    })
    .map(|_| ())
}

/// [`generate_batched`] with a sink that can stop it: once it breaks, nothing more is handed over and the
/// threads stop after the item each has under way. Returns whether it broke.
pub fn generate_batched_until<T: Send>(
    total: usize,
    threads: usize,
    make: impl Fn(usize) -> Result<T> + Sync,
    mut sink: impl FnMut(usize, T) -> ControlFlow<()>,
) -> Result<ControlFlow<()>> {
    let threads = threads.max(1);
    if threads == 1 || total <= 1 {
        for i in 0..total {
            if sink(i, make(i)?).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        return Ok(ControlFlow::Continue(()));
    }
    let mut ready: Vec<T> = Vec::new();
    let mut ready_start = 0;
    let mut start = 0;
    while start < total {
        let end = (start + BATCH * threads).min(total);
        let next = AtomicUsize::new(start);
        let batch: Result<Option<Vec<T>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (make, next) = (&make, &next);
                    s.spawn(move || -> Result<Vec<(usize, T)>> {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= end {
                                return Ok(out);
                            }
                            out.push((i, make(i)?));
                        }
                    })
                })
                .collect();
            let mut stopped = false;
            for (k, item) in std::mem::take(&mut ready).into_iter().enumerate() {
                if sink(ready_start + k, item).is_break() {
                    // The threads stop after the item each has under way.
                    next.store(end, Ordering::Relaxed);
                    stopped = true;
                    break;
                }
            }
            let mut slots: Vec<Option<T>> = (start..end).map(|_| None).collect();
            for h in handles {
                let part = h
                    .join()
                    .unwrap_or_else(|_| bail!("a generator thread panicked"))?;
                for (i, item) in part {
                    slots[i - start] = Some(item);
                }
            }
            if stopped {
                return Ok(None);
            }
            slots
                .into_iter()
                .collect::<Option<Vec<T>>>()
                .map(Some)
                .ok_or_else(|| anyhow::anyhow!("a generated item went missing"))
        });
        let Some(batch) = batch? else {
            return Ok(ControlFlow::Break(()));
        };
        ready = batch;
        ready_start = start;
        start = end;
    }
    for (k, item) in ready.into_iter().enumerate() {
        if sink(ready_start + k, item).is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// Worker threads for generation: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

mod bytes;
mod corpus;
#[cfg(test)]
mod tests;
