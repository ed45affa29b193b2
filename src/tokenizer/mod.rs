//! Tokenizers (`--tokenizer-path`): loading the fast-tokenizer file (`tokenizer.json`) with its config
//! (`tokenizer_config.json`: special tokens and chat template; `chat_template.jinja` /
//! `chat_template.json` beside it win over the config's template), encoding and decoding as
//! `transformers` does for evalscope, and the vocabulary that random prompts draw from.
//!
//! Encoding never adds special tokens (`add_special_tokens=False`); decoding keeps them
//! (`skip_special_tokens=False`), as evalscope's random dataset does.

mod download;
mod resolve;
mod template;

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{Map, Value};

pub use crate::hub::{hf_hub_cache, modelscope_roots};
pub use resolve::{resolve, resolve_from, ResolveError, TokenizerFiles};
pub use template::ChatTemplate;

/// The special-token keys of `tokenizer_config.json` (transformers' `SPECIAL_TOKENS_ATTRIBUTES`).
const SPECIAL_KEYS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// Words the BPE model keeps merged (the `tokenizers` default is 10,000). Text-mode `random` prompts re-encode
/// pieces of one long text encoded once beforehand ([`crate::dataset::random`]): with every word of it
/// remembered, those pieces skip the merges. Bounded: about 100 bytes a word.
const BPE_CACHE_WORDS: usize = 1 << 18;

/// A token's `(start, end)` byte offsets in the encoded text.
pub type ByteSpan = (usize, usize);

/// A loaded tokenizer with its chat template. `Send + Sync`.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    template: Option<ChatTemplate>,
    special_ids: Vec<u32>,
    source: String,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("source", &self.source)
            .field("vocab_size", &self.vocab_size())
            .field("has_chat_template", &self.template.is_some())
            .finish()
    }
}

/// A special token as the config writes it: a string, or an `AddedToken` object with `content`.
fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// The template text of a `chat_template` value: a string, or a list of `{name, template}` (the one named
/// `default`, else the first).
fn template_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(list) => {
            let named = |n: &str| {
                list.iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some(n))
            };
            named("default")
                .or_else(|| list.first())
                .and_then(|t| t.get("template"))
                .and_then(Value::as_str)
                .map(str::to_string)
        }
        _ => None,
    }
}

fn read_json(path: &Path) -> Result<Map<String, Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => bail!("{}: expected a JSON object", path.display()),
        Err(e) => bail!("{}: not valid JSON ({e})", path.display()),
    }
}

impl Tokenizer {
    /// Loads the tokenizer `--tokenizer-path` names (local folder, `tokenizer.json`, or hub id).
    pub fn load(spec: &str) -> Result<Tokenizer> {
        Self::load_from(spec, crate::hub::DataSource::default())
    }

    /// As [`Tokenizer::load`]; a hub id missing from the caches is downloaded from ModelScope first, or
    /// from the Hugging Face hub first with `--data-source huggingface`.
    pub fn load_from(spec: &str, source: crate::hub::DataSource) -> Result<Tokenizer> {
        let files = resolve_from(spec, source)?;
        Self::from_files(&files, spec).with_context(|| format!("--tokenizer-path {spec}"))
    }

    /// Loads `files`; `source` names it in messages.
    pub fn from_files(files: &TokenizerFiles, source: &str) -> Result<Tokenizer> {
        let mut inner = tokenizers::Tokenizer::from_file(&files.tokenizer_json)
            .map_err(|e| anyhow!("cannot load {}: {e}", files.tokenizer_json.display()))?;
        if let tokenizers::ModelWrapper::BPE(_) = inner.get_model() {
            let mut model = inner.get_model().clone();
            model.resize_cache(BPE_CACHE_WORDS);
            inner.with_model(model);
        }
        let config_path = files.dir.join("tokenizer_config.json");
        let config = if config_path.is_file() {
            read_json(&config_path)?
        } else {
            Map::new()
        };
        let mut special_tokens: Vec<(String, Value)> = Vec::new();
        let mut special_texts: Vec<String> = Vec::new();
        for key in SPECIAL_KEYS {
            let text = config.get(key).and_then(token_text);
            if let Some(t) = &text {
                special_texts.push(t.clone());
            }
            special_tokens.push((key.to_string(), text.map_or(Value::Null, Value::String)));
        }
        if let Some(Value::Array(extra)) = config.get("additional_special_tokens") {
            special_texts.extend(extra.iter().filter_map(token_text));
        }
        let mut special_ids: Vec<u32> = special_texts
            .iter()
            .filter_map(|t| inner.token_to_id(t))
            .chain(
                inner
                    .get_added_tokens_decoder()
                    .iter()
                    .filter(|(_, t)| t.special)
                    .map(|(id, _)| *id),
            )
            .collect();
        special_ids.sort_unstable();
        special_ids.dedup();

        let jinja = files.dir.join("chat_template.jinja");
        let json = files.dir.join("chat_template.json");
        let template_source = if jinja.is_file() {
            Some(
                std::fs::read_to_string(&jinja)
                    .with_context(|| format!("reading {}", jinja.display()))?,
            )
        } else if json.is_file() {
            read_json(&json)?
                .get("chat_template")
                .and_then(template_text)
        } else {
            config.get("chat_template").and_then(template_text)
        };
        let template = match template_source {
            Some(src) => Some(
                ChatTemplate::new(src, special_tokens)
                    .map_err(|e| anyhow!("the chat template does not compile: {e}"))?,
            ),
            None => None,
        };
        Ok(Tokenizer {
            inner,
            template,
            special_ids,
            source: source.to_string(),
        })
    }

    /// What `--tokenizer-path` said.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `len(tokenizer)`: the vocabulary with added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The special token ids (config's named and additional special tokens, and added tokens marked
    /// special), ascending.
    pub fn special_ids(&self) -> &[u32] {
        &self.special_ids
    }

    /// Token ids of `text`, without special tokens added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| anyhow!("tokenizing: {e}"))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Number of tokens in `text` (no special tokens added).
    pub fn count(&self, text: &str) -> Result<usize> {
        Ok(self
            .inner
            .encode_fast(text, false)
            .map_err(|e| anyhow!("tokenizing: {e}"))?
            .len())
    }

    /// Token ids of `text` with each token's byte span in `text` (no special tokens added).
    pub fn encode_spans(&self, text: &str) -> Result<(Vec<u32>, Vec<ByteSpan>)> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| anyhow!("tokenizing: {e}"))?;
        Ok((enc.get_ids().to_vec(), enc.get_offsets().to_vec()))
    }

    /// The raw bytes of every token id (byte-level BPE: the token strings through GPT-2's byte↔unicode
    /// table; added tokens: their content), when decoding is exactly "concatenate the bytes, then UTF-8
    /// with replacement" — checked on a sample of ids. `None` for other tokenizers.
    pub fn byte_table(&self) -> Option<Vec<Vec<u8>>> {
        let unicode_to_byte = byte_level_inverse();
        let added = self.inner.get_added_tokens_decoder();
        let n = self.vocab_size();
        let mut table = Vec::with_capacity(n);
        for id in 0..n as u32 {
            if let Some(t) = added.get(&id) {
                table.push(t.content.as_bytes().to_vec());
                continue;
            }
            let token = self.inner.id_to_token(id)?;
            let bytes: Option<Vec<u8>> = token
                .chars()
                .map(|c| unicode_to_byte.get(&c).copied())
                .collect();
            table.push(bytes?);
        }
        // Check the claim on a spread of ids (and all special ones, which decode kept).
        let step = (n / 997).max(1);
        let sample: Vec<u32> = (0..n as u32).step_by(step).collect();
        for chunk in sample.chunks(61) {
            let bytes: Vec<u8> = chunk
                .iter()
                .flat_map(|&i| table[i as usize].iter().copied())
                .collect();
            if self.decode(chunk).ok()? != String::from_utf8_lossy(&bytes) {
                return None;
            }
        }
        Some(table)
    }

    /// Text of `ids`, special tokens dropped (`skip_special_tokens=True`).
    pub fn decode_skip_special(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| anyhow!("decoding: {e}"))
    }

    /// Text of `ids`, special tokens kept.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| anyhow!("decoding: {e}"))
    }

    /// The ids random prompts draw from: every id below `len(tokenizer)` except special tokens and
    /// byte-fallback tokens (`<0xNN>`), ascending.
    pub fn allowed_ids(&self) -> Vec<u32> {
        let n = self.vocab_size() as u32;
        let mut prohibited = vec![false; n as usize];
        for &id in &self.special_ids {
            if let Some(p) = prohibited.get_mut(id as usize) {
                *p = true;
            }
        }
        for (token, id) in self.inner.get_vocab(true) {
            let b = token.as_bytes();
            if b.len() == 6
                && b.starts_with(b"<0x")
                && b[5] == b'>'
                && b[3].is_ascii_hexdigit()
                && b[4].is_ascii_hexdigit()
            {
                if let Some(p) = prohibited.get_mut(id as usize) {
                    *p = true;
                }
            }
        }
        (0..n).filter(|&id| !prohibited[id as usize]).collect()
    }

    /// Whether the tokenizer has a chat template.
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// The chat template rendered for `messages`, with `kwargs` (`chat_template_kwargs`) as variables.
    pub fn render_chat(
        &self,
        messages: &[Value],
        add_generation_prompt: bool,
        kwargs: &Map<String, Value>,
    ) -> Result<String> {
        let Some(t) = &self.template else {
            bail!(self.template_error(
                "it has no chat template (no `chat_template` in tokenizer_config.json, no chat_template.jinja or chat_template.json)"
            ));
        };
        t.render(messages, add_generation_prompt, kwargs)
            .map_err(|e| anyhow!(self.template_error(&format!("{e:#}"))))
    }

    /// The error for a chat template that cannot be applied (none, or one that rejects the messages), with
    /// the ways out evalscope 1.14.1 names: it names the tokenizer and `--no-apply-chat-template`.
    pub fn template_error(&self, cause: &str) -> String {
        format!(
            "--tokenizer-path {0}: cannot apply the chat template of tokenizer `{0}`: {cause}. \
             The template is applied on the client only, to count prompt tokens as the server does. Either \
             drop `--tokenizer-path` and let the server's `usage` give the token counts; or use a tokenizer \
             that ships a chat template and shares the vocabulary of the served model (another vocabulary \
             distorts the counts); or pass `--no-apply-chat-template` and benchmark a text-completions \
             endpoint (`/v1/completions`) instead",
            self.source
        )
    }

    /// `len(apply_chat_template(messages, add_generation_prompt=True, tokenize=True))`.
    pub fn chat_token_count(
        &self,
        messages: &[Value],
        kwargs: &Map<String, Value>,
    ) -> Result<usize> {
        self.count(&self.render_chat(messages, true, kwargs)?)
    }
}

/// GPT-2's byte-level table inverted: the unicode character each byte is written as → the byte.
fn byte_level_inverse() -> std::collections::HashMap<char, u8> {
    let mut printable: Vec<u32> = (u32::from('!')..=u32::from('~'))
        .chain(u32::from('¡')..=u32::from('¬'))
        .chain(u32::from('®')..=u32::from('ÿ'))
        .collect();
    let mut chars = printable.clone();
    let mut extra = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    printable
        .iter()
        .zip(&chars)
        .filter_map(|(&b, &c)| Some((char::from_u32(c)?, b as u8)))
        .collect()
}

#[cfg(test)]
mod tests;
