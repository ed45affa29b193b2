//! The raw bytes of every token of a byte-level tokenizer, laid out for fast decoding: one flat buffer with
//! offsets, and a fixed-width copy of each short token so that decoding a window of thousands of tokens is a
//! run of fixed-size copies instead of one `memmove` call per token.

/// Width of the fixed-size copies: tokens up to this many bytes (nearly all) are copied in one move.
const PAD_BYTES: usize = 16;

/// Token id → bytes.
pub(super) struct TokenBytes {
    /// All tokens' bytes, back to back.
    data: Vec<u8>,
    /// Per id: start of its bytes in `data`; one more entry for the end.
    off: Vec<u32>,
    /// Per id: its first [`PAD_BYTES`] bytes, zero-padded.
    pad: Vec<[u8; PAD_BYTES]>,
}

impl TokenBytes {
    /// The layout of `table` (`table[id]` = bytes of `id`).
    pub fn new(table: &[Vec<u8>]) -> TokenBytes {
        let mut data = Vec::with_capacity(table.iter().map(Vec::len).sum());
        let mut off = Vec::with_capacity(table.len() + 1);
        let mut pad = Vec::with_capacity(table.len());
        for bytes in table {
            off.push(data.len() as u32);
            data.extend_from_slice(bytes);
            let mut p = [0u8; PAD_BYTES];
            let n = bytes.len().min(PAD_BYTES);
            p[..n].copy_from_slice(&bytes[..n]);
            pad.push(p);
        }
        off.push(data.len() as u32);
        TokenBytes { data, off, pad }
    }

    /// The bytes of `id`.
    pub fn get(&self, id: u32) -> &[u8] {
        let i = id as usize;
        &self.data[self.off[i] as usize..self.off[i + 1] as usize]
    }

    /// Number of bytes of `id`.
    pub fn len_of(&self, id: u32) -> usize {
        let i = id as usize;
        (self.off[i + 1] - self.off[i]) as usize
    }

    /// Appends the bytes of `ids` to `out`.
    pub fn extend(&self, out: &mut Vec<u8>, ids: &[u32]) {
        let total: usize = ids.iter().map(|&id| self.len_of(id)).sum();
        let mut pos = out.len();
        // Room for the last fixed-size copy to spill over; cut back below.
        out.resize(pos + total + PAD_BYTES, 0);
        for &id in ids {
            let n = self.len_of(id);
            if n <= PAD_BYTES {
                out[pos..pos + PAD_BYTES].copy_from_slice(&self.pad[id as usize]);
            } else {
                out[pos..pos + n].copy_from_slice(self.get(id));
            }
            pos += n;
        }
        out.truncate(pos);
    }
}

/// `bytes` as UTF-8 with replacement characters (Python's `errors="replace"`, what decoding does), without
/// copying when they are valid.
pub(super) fn utf8_lossy(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            // `String::from_utf8_lossy`'s own loop, written into one buffer (no second copy).
            let bytes = e.into_bytes();
            let mut out = String::with_capacity(bytes.len() + 16);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                if !chunk.invalid().is_empty() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
            }
            out
        }
    }
}

/// Length of the common prefix of `a` and `b`, in bytes.
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    // Whole chunks compare as slices (vectorised), then the first differing chunk byte by byte.
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_copies_short_and_long_tokens() {
        let table = vec![
            b"a".to_vec(),
            Vec::new(),
            b"0123456789abcdefXYZ".to_vec(),
            b"0123456789abcdef".to_vec(),
            vec![0xe4, 0xb8],
        ];
        let t = TokenBytes::new(&table);
        let mut out = b"pre".to_vec();
        t.extend(&mut out, &[0, 2, 1, 3, 0, 4]);
        let mut want = b"pre".to_vec();
        for id in [0, 2, 1, 3, 0, 4] {
            want.extend_from_slice(&table[id]);
        }
        assert_eq!(out, want);
        assert_eq!(t.get(2), table[2].as_slice());
        assert_eq!(t.len_of(1), 0);
    }

    #[test]
    fn lossy_and_common_prefix() {
        assert_eq!(utf8_lossy(b"ok".to_vec()), "ok");
        assert_eq!(utf8_lossy(vec![b'a', 0xe4, 0xb8]), "a\u{fffd}");
        assert_eq!(utf8_lossy(vec![0xff, b'b']), "\u{fffd}b");
        // Every kind of invalid sequence, as std's from_utf8_lossy replaces it.
        let mut mixed = Vec::new();
        for chunk in [
            &b"ab"[..],
            &[0xe4, 0xb8, b'c'],
            &[0xf0, 0x9f, 0x98],
            &[0x80, 0x80],
            "\u{4e2d}".as_bytes(),
            &[0xed, 0xa0, 0x80],
            &[0xc0, 0xaf, b'z'],
            &[0xf4, 0x90, 0x80, 0x80],
            &[0xe4, 0xb8],
        ] {
            mixed.extend_from_slice(chunk);
            assert_eq!(
                utf8_lossy(mixed.clone()),
                String::from_utf8_lossy(&mixed),
                "{mixed:x?}"
            );
        }
        let a: Vec<u8> = (0..200u8).collect();
        let mut b = a.clone();
        assert_eq!(common_prefix(&a, &b), 200);
        b[130] = 0;
        assert_eq!(common_prefix(&a, &b), 130);
        assert_eq!(common_prefix(&a[..10], &b), 10);
        assert_eq!(common_prefix(b"", &b), 0);
    }
}
