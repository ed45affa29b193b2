//! Fast decode/re-encode of random windows (text mode of `random`), same results as the tokenizer.
//!
//! Every window is a run of one long sequence `S` (the allowed vocabulary, repeated), so its text is a
//! slice of `decode(S)` and its encoding is, away from the two ends, a slice of `encode(decode(S))`,
//! computed once. A window is then encoded as: a fresh encoding of its head (plus any prefix), the
//! precomputed tokens of the middle, and a fresh encoding of its tail. Each seam sits where the byte before
//! is ASCII (so UTF-8 decoding is in step on both sides) at a token boundary, and is accepted only when the
//! fresh encoding reproduces the precomputed tokens over [`MARGINS`] bytes beside it; otherwise the window
//! is encoded whole. The convergence loop's later steps change only the end of the text, so they re-encode
//! just the tail the same way. Only byte-level BPE tokenizers qualify (decoding = concatenating token
//! bytes, checked at start); others use the plain loop.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;
use rand::Rng;

use super::bytes::{common_prefix, utf8_lossy, TokenBytes};
use super::{Vocab, MAX_CORRECTIONS};

/// Bytes beside a seam that a fresh encoding must reproduce: tried in turn until one agrees (short is
/// fast; longer gets through long "words" — symbol runs, scripts written without spaces — where 64 bytes
/// disagree: with Qwen3, 256 rescues ~3/4 of those windows, which otherwise are encoded whole at ~100x the
/// cost; longer margins rescue none of the rest).
const MARGINS: [usize; 2] = [64, 256];

/// Largest sequence precomputed (tokens).
const MAX_CORPUS_TOKENS: usize = 1_500_000;

/// Tokens of a text with their byte spans.
#[derive(Debug, Clone, Default)]
pub(super) struct Spans {
    ids: Vec<u32>,
    start: Vec<usize>,
    end: Vec<usize>,
}

impl Spans {
    fn with_capacity(n: usize) -> Spans {
        Spans {
            ids: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, id: u32, start: usize, end: usize) {
        self.ids.push(id);
        self.start.push(start);
        self.end.push(end);
    }
}

/// The precomputed sequence and its encoding.
pub(super) struct Corpus {
    vocab: Vocab,
    bytes: TokenBytes,
    /// Tokens in the sequence.
    len: usize,
    /// Per sequence index `0..=len`: byte offset in the decoded sequence when it is a character boundary
    /// there (`u32::MAX` otherwise).
    clean: Vec<u32>,
    /// `decode(S)`.
    text: String,
    /// `encode(decode(S))`.
    enc: Spans,
    /// Per token of `enc`: a seam candidate (token boundary on a character boundary).
    seam: Vec<bool>,
    /// Encodings stitched / done whole (windows and correction steps).
    stitched: AtomicU64,
    whole: AtomicU64,
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn to_spans(ids: Vec<u32>, offsets: Vec<crate::tokenizer::ByteSpan>) -> Spans {
    let (start, end) = offsets.into_iter().unzip();
    Spans { ids, start, end }
}

/// Whether token `j` of `s` starts a seam candidate in `text`: a token boundary on a character boundary
/// (not inside a character that byte-level tokens split). Whether the encodings agree there is checked by
/// the caller over [`MARGINS`] bytes.
fn is_seam(s: &Spans, j: usize, text: &str) -> bool {
    j > 0
        && j < s.ids.len()
        && s.start[j] == s.end[j - 1]
        && s.start[j] > s.start[j - 1]
        && text.is_char_boundary(s.start[j])
}

impl Corpus {
    /// Precomputes the sequence for windows up to `max_window` tokens; `None` when the tokenizer is not
    /// byte-level or the sequence would be too long.
    pub fn build(vocab: &Vocab, max_window: usize) -> Result<Option<Corpus>> {
        let n = vocab.allowed.len();
        let len = n + max_window;
        if len > MAX_CORPUS_TOKENS {
            return Ok(None);
        }
        let Some(table) = vocab.tok.byte_table() else {
            return Ok(None);
        };
        let mut all = Vec::new();
        let mut pos = Vec::with_capacity(len + 1);
        for i in 0..len {
            pos.push(all.len());
            all.extend_from_slice(&table[vocab.allowed[i % n] as usize]);
        }
        pos.push(all.len());
        let text = lossy(&all);
        let mut clean = vec![u32::MAX; len + 1];
        clean[0] = 0;
        let (mut b0, mut t0, mut i) = (0usize, 0usize, 1usize);
        for chunk in all.utf8_chunks() {
            let valid = chunk.valid().len();
            while i <= len && pos[i] <= b0 + valid {
                let t = t0 + pos[i] - b0;
                if pos[i] > b0 && text.is_char_boundary(t) {
                    clean[i] = t as u32;
                }
                i += 1;
            }
            b0 += valid + chunk.invalid().len();
            t0 += valid + if chunk.invalid().is_empty() { 0 } else { 3 };
            while i <= len && pos[i] <= b0 {
                i += 1;
            }
        }
        let (ids, offsets) = vocab.tok.encode_spans(&text)?;
        let enc = to_spans(ids, offsets);
        let seam = (0..enc.ids.len())
            .map(|j| is_seam(&enc, j, &text))
            .collect();
        Ok(Some(Corpus {
            vocab: vocab.clone(),
            bytes: TokenBytes::new(&table),
            len,
            clean,
            text,
            enc,
            seam,
            stitched: AtomicU64::new(0),
            whole: AtomicU64::new(0),
        }))
    }

    /// `decode(ids)`: the tokens' bytes as UTF-8 with replacement.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut out = Vec::new();
        self.bytes.extend(&mut out, ids);
        utf8_lossy(out)
    }

    /// `(stitched, whole)` encodings so far.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.stitched.load(Ordering::Relaxed),
            self.whole.load(Ordering::Relaxed),
        )
    }

    /// The stitched encoding, or the whole-text one when stitching declined.
    fn counted(&self, stitched: Option<Spans>, text: &str) -> Result<Spans> {
        match stitched {
            Some(s) => {
                self.stitched.fetch_add(1, Ordering::Relaxed);
                Ok(s)
            }
            None => {
                self.whole.fetch_add(1, Ordering::Relaxed);
                self.full(text)
            }
        }
    }

    fn full(&self, text: &str) -> Result<Spans> {
        let (ids, offsets) = self.vocab.tok.encode_spans(text)?;
        Ok(to_spans(ids, offsets))
    }

    /// First precomputed seam at or after byte `at`.
    fn seam_from(&self, at: usize) -> Option<usize> {
        let mut j = self.enc.start.partition_point(|&s| s < at);
        while j < self.seam.len() && !self.seam[j] {
            j += 1;
        }
        (j < self.seam.len()).then_some(j)
    }

    /// Last precomputed seam at or before byte `at`.
    fn seam_until(&self, at: usize) -> Option<usize> {
        let mut j = self.enc.start.partition_point(|&s| s <= at);
        while j > 0 {
            j -= 1;
            if self.seam[j] {
                return Some(j);
            }
        }
        None
    }

    /// The encoding of `text` = decode(`prefix` ++ S[window_start..window_start + window_len]), stitched;
    /// `None` when no seam holds.
    fn encode_window(
        &self,
        text: &str,
        prefix: &[u32],
        window_start: usize,
        window_len: usize,
    ) -> Result<Option<Spans>> {
        for margin in MARGINS {
            if let Some(found) =
                self.encode_window_with(text, prefix, window_start, window_len, margin)?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// [`Corpus::encode_window`] with one seam margin: the middle tokens are the sequence's own, the head
    /// and the tail are encoded afresh and must agree with them where they overlap.
    fn encode_window_with(
        &self,
        text: &str,
        prefix: &[u32],
        window_start: usize,
        window_len: usize,
        margin: usize,
    ) -> Result<Option<Spans>> {
        if window_len < 64 || window_start + window_len > self.len {
            return Ok(None);
        }
        let Some(anchor) = self.anchor(text, prefix, window_start, window_len) else {
            return Ok(None);
        };
        // At least 16 tokens from the end: the window's last bytes may decode differently (a character cut
        // by the window's end) than the same bytes inside the long sequence.
        let Some(end_token) = (anchor.token + 1..=window_start + window_len - 16)
            .rev()
            .find(|&i| self.clean[i] != u32::MAX)
        else {
            return Ok(None);
        };
        let (seq_start, seq_end) = (anchor.seq_byte, self.clean[end_token] as usize);
        let text_start = anchor.text_byte;
        if seq_end <= seq_start
            || text_start + (seq_end - seq_start) > text.len()
            || text.as_bytes()[text_start..text_start + (seq_end - seq_start)]
                != self.text.as_bytes()[seq_start..seq_end]
        {
            return Ok(None);
        }
        let to_text = |seq_byte: usize| text_start + seq_byte - seq_start;
        // Middle tokens: seams [first, last) well inside [seq_start, seq_end].
        let (Some(first), Some(last)) = (
            self.seam_from(seq_start + margin),
            self.seam_until(seq_end.saturating_sub(margin)),
        ) else {
            return Ok(None);
        };
        let Some(check) = self.seam_from(self.enc.start[first] + margin) else {
            return Ok(None);
        };
        let Some(cut) = self.seam_from(self.enc.start[check] + margin) else {
            return Ok(None);
        };
        if cut >= last {
            return Ok(None);
        }
        let Some(mut known) = self.fresh_head(text, [first, check, cut, last], &to_text)? else {
            return Ok(None);
        };
        for j in first..last {
            known.push(
                self.enc.ids[j],
                to_text(self.enc.start[j]),
                to_text(self.enc.end[j]),
            );
        }
        let valid_upto = to_text(self.enc.start[last]);
        Ok(self
            .splice_tail_with(text, &mut known, valid_upto, margin)?
            .then_some(known))
    }

    /// Where the window's text and the sequence's text are in step (the UTF-8 decoding of the window's
    /// first bytes may differ): the first token boundary, within the window's first 64 tokens, where 16
    /// bytes of both texts agree.
    fn anchor(
        &self,
        text: &str,
        prefix: &[u32],
        window_start: usize,
        window_len: usize,
    ) -> Option<Anchor> {
        let mut head_bytes = Vec::new();
        self.bytes.extend(&mut head_bytes, prefix);
        for i in window_start..(window_start + 64).min(window_start + window_len / 2) {
            head_bytes.extend_from_slice(
                self.bytes
                    .get(self.vocab.allowed[i % self.vocab.allowed.len()]),
            );
            let token = i + 1;
            if token < window_start + 2 || self.clean[token] == u32::MAX {
                continue;
            }
            let text_byte = String::from_utf8_lossy(&head_bytes).len();
            let seq_byte = self.clean[token] as usize;
            let probe = 16
                .min(text.len().saturating_sub(text_byte))
                .min(self.text.len() - seq_byte);
            if text.as_bytes()[text_byte..text_byte + probe]
                == self.text.as_bytes()[seq_byte..seq_byte + probe]
            {
                return Some(Anchor {
                    token,
                    text_byte,
                    seq_byte,
                });
            }
        }
        None
    }

    /// The head of the window encoded afresh up to the seam `cut`, which must agree with the sequence's
    /// tokens on the seams `[first, check)`; its tokens before `first` (with room for the middle tokens up
    /// to `last`), or `None` when they disagree.
    fn fresh_head(
        &self,
        text: &str,
        [first, check, cut, last]: [usize; 4],
        to_text: &dyn Fn(usize) -> usize,
    ) -> Result<Option<Spans>> {
        let fresh = self.full(&text[..to_text(self.enc.start[cut])])?;
        let Some(fresh_first) = fresh
            .start
            .iter()
            .position(|&x| x == to_text(self.enc.start[first]))
        else {
            return Ok(None);
        };
        let overlap = check - first;
        if fresh.ids.len() < fresh_first + overlap + 1
            || fresh.ids[fresh_first..fresh_first + overlap] != self.enc.ids[first..check]
            || fresh.start[fresh_first + overlap] != to_text(self.enc.start[check])
        {
            return Ok(None);
        }
        let mut known = Spans::with_capacity(fresh_first + last - first);
        for j in 0..fresh_first {
            known.push(fresh.ids[j], fresh.start[j], fresh.end[j]);
        }
        Ok(Some(known))
    }

    /// The encoding of `text` whose tokens before byte `valid_upto` are `known`: keep them up to a seam
    /// a margin before, encode the rest afresh from a seam a margin further back, and accept only when
    /// the fresh tokens reproduce the known ones between the two seams.
    fn splice_tail(
        &self,
        text: &str,
        mut known: Spans,
        valid_upto: usize,
    ) -> Result<Option<Spans>> {
        for margin in MARGINS {
            if self.splice_tail_with(text, &mut known, valid_upto, margin)? {
                return Ok(Some(known));
            }
        }
        Ok(None)
    }

    /// [`Corpus::splice_tail`] with one margin: `known` becomes the encoding of `text` when the seams hold
    /// (`true`), and is left as it is otherwise.
    fn splice_tail_with(
        &self,
        text: &str,
        known: &mut Spans,
        valid_upto: usize,
        margin: usize,
    ) -> Result<bool> {
        let seam_before = |limit: usize, below: usize| {
            (1..below.min(known.ids.len()))
                .rev()
                .find(|&j| known.start[j] <= limit && is_seam(known, j, text))
        };
        let Some(c) = seam_before(valid_upto.saturating_sub(margin), known.ids.len()) else {
            return Ok(false);
        };
        let Some(v) = seam_before(known.start[c].saturating_sub(margin), c) else {
            return Ok(false);
        };
        let base = known.start[v];
        let fresh = self.full(&text[base..])?;
        let k = c - v;
        if fresh.ids.len() < k + 1
            || fresh.ids[..k] != known.ids[v..c]
            || (0..k).any(|j| fresh.start[j] + base != known.start[v + j])
            || fresh.start[k] + base != known.start[c]
        {
            return Ok(false);
        }
        known.ids.truncate(c);
        known.start.truncate(c);
        known.end.truncate(c);
        for j in k..fresh.ids.len() {
            known.push(fresh.ids[j], fresh.start[j] + base, fresh.end[j] + base);
        }
        Ok(true)
    }

    /// When `spans` decode to a valid UTF-8 text whose bytes are exactly the tokens' bytes, that text with
    /// the spans re-anchored on it (`None`: the caller's text and spans stand).
    fn decoded_spans(&self, spans: &Spans) -> Option<(String, Spans)> {
        let mut bytes = Vec::new();
        let mut out = Spans::with_capacity(spans.ids.len());
        for &id in &spans.ids {
            let start = bytes.len();
            bytes.extend_from_slice(self.bytes.get(id));
            out.push(id, start, bytes.len());
        }
        String::from_utf8(bytes).ok().map(|t| (t, out))
    }

    /// Whether `spans` are `text` token by token: contiguous from byte 0 to the end, each token's bytes
    /// exactly the text's there — then [`Corpus::decoded_spans`] would give back `text` and `spans`.
    fn spells(&self, spans: &Spans, text: &str) -> bool {
        let mut pos = 0;
        for (j, &id) in spans.ids.iter().enumerate() {
            let n = self.bytes.len_of(id);
            if spans.start[j] != pos || spans.end[j] != pos + n {
                return false;
            }
            pos += n;
        }
        if pos != text.len() {
            return false;
        }
        // One copy and one comparison beat a comparison call per token.
        let mut bytes = Vec::with_capacity(pos + 16);
        self.bytes.extend(&mut bytes, &spans.ids);
        bytes == text.as_bytes()
    }

    /// `spans` with the text their tokens spell (`Err` with them back when their bytes are not UTF-8).
    fn own_text(&self, text: String, spans: Spans) -> Result<(String, Spans), (String, Spans)> {
        if self.spells(&spans, &text) {
            return Ok((text, spans));
        }
        self.decoded_spans(&spans).ok_or((text, spans))
    }

    /// The convergence loop of [`Vocab::converge`] for `prefix ++ S[s..s+len]`, with stitched encodings.
    pub fn converge(
        &self,
        prefix: &[u32],
        s: usize,
        len: usize,
        target: usize,
        rng: &mut impl Rng,
    ) -> Result<(String, i64)> {
        let mut ids: Vec<u32> = Vec::with_capacity(prefix.len() + len);
        ids.extend_from_slice(prefix);
        ids.extend(self.vocab.allowed_window(s, len));
        let mut text = self.decode(&ids);
        drop(ids);
        let stitched = self.encode_window(&text, prefix, s, len)?;
        let mut spans = self.counted(stitched, &text)?;
        let mut attempt = 0;
        loop {
            let mismatch = spans.ids.len() as i64 - target as i64;
            if mismatch == 0 || attempt == MAX_CORRECTIONS {
                return Ok((text, mismatch));
            }
            // The next ids: the first `keep` tokens, then `added` (cut the excess, or append random ids).
            let keep = spans.ids.len().min(target);
            let added: Vec<u32> = (mismatch..0).map(|_| self.vocab.draw(rng)).collect();
            // The tokenizer's normalizer (NFC) may have changed characters: then the tokens describe their
            // own decoded text, and that is what the next text shares a prefix with.
            let (new_text, base_spans, common) = match self.own_text(text, spans) {
                Ok((mut own, own_spans)) => {
                    // decode(next) = the own text up to the last character boundary before the kept
                    // tokens' end, then the rest of their bytes and the added ids' bytes, decoded.
                    let end = if keep == 0 {
                        0
                    } else {
                        own_spans.end[keep - 1]
                    };
                    let mut cut = end;
                    while !own.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    let mut rest = own.as_bytes()[cut..end].to_vec();
                    self.bytes.extend(&mut rest, &added);
                    let rest = utf8_lossy(rest);
                    let common = cut + common_prefix(&own.as_bytes()[cut..], rest.as_bytes());
                    own.truncate(cut);
                    own.push_str(&rest);
                    (own, own_spans, common)
                }
                Err((text, spans)) => {
                    let mut next = spans.ids[..keep].to_vec();
                    next.extend_from_slice(&added);
                    let new_text = self.decode(&next);
                    let common = common_prefix(text.as_bytes(), new_text.as_bytes());
                    (new_text, spans, common)
                }
            };
            let stitched = self.splice_tail(&new_text, base_spans, common)?;
            spans = self.counted(stitched, &new_text)?;
            text = new_text;
            attempt += 1;
        }
    }
}
/// A token boundary where the window's text and the long sequence's text are in step.
struct Anchor {
    /// The token (index into the sequence).
    token: usize,
    /// Its byte offset in the window's text.
    text_byte: usize,
    /// Its byte offset in the sequence's text.
    seq_byte: usize,
}
