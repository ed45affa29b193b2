//! Byte-level JSON scanning shared by the hot-path readers that look at only a few fields of a document
//! (`api::event_scan`, `store::fast_pickle`): finding the end of a string eight bytes at a time, and
//! skipping a value with exactly the checks `serde_json` applies to a value it ignores (structure, number
//! grammar, string escapes — but not UTF-8 or surrogate pairs, which it does not check there either).
//!
//! Every function answers `None` for input it would not treat exactly as `serde_json` does; callers then
//! fall back to `serde_json` itself.

/// The first `"`, `\` or control character (< 0x20) in `s`, eight bytes at a time.
pub fn find_special(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A high bit set at (at least) the lowest byte of `w` that is zero; higher bytes may be false alarms.
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut chunks = s.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let hits = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hits != 0 {
            return Some(base + (hits.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|p| base + p)
}

/// The length of the leading run of `s` that needs nothing done to it inside a JSON string: the position of
/// the first `"`, `\`, control character (< 0x20) or non-ASCII byte (≥ 0x80), else `s.len()`. Eight bytes at
/// a time, the last (short) word padded.
#[inline]
pub fn find_plain_end(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The lowest byte flagged is the first such byte (only bytes above a hit can be false alarms).
    let hits = |w: u64| {
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
        zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
            | (w & HIGH)
    };
    let mut base = 0;
    let mut words = s.chunks_exact(8);
    for chunk in &mut words {
        let h = hits(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        if h != 0 {
            return base + (h.trailing_zeros() / 8) as usize;
        }
        base += 8;
    }
    let rest = words.remainder();
    let mut last = [b'"'; 8];
    last[..rest.len()].copy_from_slice(rest);
    let h = hits(u64::from_le_bytes(last));
    (base + (h.trailing_zeros() / 8) as usize).min(s.len())
}

/// How many leading bytes `a` and `b` share, eight at a time.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Deepest nesting skipped here (deeper values make the caller fall back).
const MAX_DEPTH: usize = 100;

/// A cursor over one JSON document.
pub struct Cursor<'a> {
    /// The document.
    pub s: &'a [u8],
    /// The next byte to read.
    pub i: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `s`.
    pub fn new(s: &'a [u8]) -> Self {
        Cursor { s, i: 0 }
    }

    /// Skips JSON whitespace; returns the next byte, if any.
    pub fn ws(&mut self) -> Option<u8> {
        while let Some(&b) = self.s.get(self.i) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.i += 1;
        }
        None
    }

    /// After whitespace, the byte `b` (consumed).
    pub fn expect(&mut self, b: u8) -> Option<()> {
        (self.ws()? == b).then(|| self.i += 1)
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.ws().is_none()
    }

    /// At `"`: skips a string (escapes checked as serde_json does when ignoring it). Returns the raw bytes
    /// between the quotes and whether they contain an escape.
    #[inline]
    pub fn string(&mut self) -> Option<(&'a [u8], bool)> {
        let (raw, escaped, _) = self.string_ascii()?;
        Some((raw, escaped))
    }

    /// The rest of a string from `start` (after its `"`) that holds escapes or non-ASCII bytes.
    #[cold]
    fn string_slow(&mut self, start: usize) -> Option<(&'a [u8], bool)> {
        self.i = start;
        let mut escaped = false;
        loop {
            let at = self.i + find_special(&self.s[self.i..])?;
            match self.s[at] {
                b'"' => {
                    self.i = at + 1;
                    return Some((&self.s[start..at], escaped));
                }
                b'\\' => {
                    escaped = true;
                    match *self.s.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i = at + 2,
                        b'u' => {
                            let hex = self.s.get(at + 2..at + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i = at + 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// As [`Cursor::string`], and whether the text needs no UTF-8 check: `true` when it is plain ASCII
    /// without escapes (then `escaped` is `false` too).
    #[inline]
    pub fn string_ascii(&mut self) -> Option<(&'a [u8], bool, bool)> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let end = start + find_plain_end(&self.s[start..]);
        if self.s.get(end) == Some(&b'"') {
            self.i = end + 1;
            return Some((&self.s[start..end], false, true));
        }
        let (raw, escaped) = self.string_slow(start)?;
        Some((raw, escaped, false))
    }

    /// A number token, with serde_json's grammar (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`).
    pub fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        let digits = |c: &mut Self| {
            let from = c.i;
            while c.s.get(c.i).is_some_and(u8::is_ascii_digit) {
                c.i += 1;
            }
            c.i > from
        };
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.s.get(self.i)? {
            b'0' => {
                self.i += 1;
                if self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        Some(&self.s[start..self.i])
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.s[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// Skips one value (after whitespace) with serde_json's checks for an ignored value.
    pub fn skip_value(&mut self) -> Option<()> {
        self.skip(0)
    }

    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.ws()? {
            b'"' => self.string().map(|_| ()),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.number().map(|_| ()),
            b'[' if depth < MAX_DEPTH => {
                self.i += 1;
                if self.ws()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.ws()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'{' if depth < MAX_DEPTH => {
                self.i += 1;
                if self.ws()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws()?;
                    self.string()?;
                    self.expect(b':')?;
                    self.skip(depth + 1)?;
                    match self.ws()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_bytes_are_found_at_every_position() {
        for len in 0..40 {
            for pos in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut s: Vec<u8> = (0..len)
                        .map(|i| [b'a', 0x20, 0x21, 0x5b, 0x5d, 0xc3, 0xa9, 0xff][i % 8])
                        .collect();
                    s[pos] = special;
                    assert_eq!(
                        find_special(&s),
                        Some(pos),
                        "len {len} pos {pos} byte {special:#x}"
                    );
                }
            }
            assert_eq!(find_special(&vec![b'x'; len]), None);
        }
    }

    /// The oracle: the first byte that is not plain ASCII string content, one byte at a time.
    fn plain_end_bytewise(s: &[u8]) -> usize {
        s.iter()
            .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
            .unwrap_or(s.len())
    }

    #[test]
    fn plain_end_matches_a_bytewise_scan() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let alphabet = [
            b'a', b' ', 0x21, 0x5b, 0x7f, b'"', b'\\', 0x00, 0x1f, 0x20, 0x80, 0xc3, 0xff,
        ];
        for len in 0..40 {
            for _ in 0..200 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        if rng.random_range(0..4) == 0 {
                            alphabet[rng.random_range(0..alphabet.len())]
                        } else {
                            rng.random_range(0x20..0x7f)
                        }
                    })
                    .collect();
                assert_eq!(find_plain_end(&s), plain_end_bytewise(&s), "{s:?}");
            }
        }
        for b in 0..=255u8 {
            for pos in 0..20 {
                let mut s = vec![b'x'; 20];
                s[pos] = b;
                assert_eq!(
                    find_plain_end(&s),
                    plain_end_bytewise(&s),
                    "byte {b:#x} at {pos}"
                );
            }
        }
    }

    #[test]
    fn skipping_accepts_what_serde_json_ignores() {
        let cases: &[&[u8]] = &[
            b"1",
            b"-0",
            b"0.5",
            b"1e9",
            b"-1.5E-3",
            b"01",
            b"1.",
            b"1e",
            b"-",
            b".5",
            b"\"a\\u00e9\\n\"",
            b"\"\\ud800\"",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"[1, {\"a\": [null, true, false]}]",
            b"[1,]",
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"{1:2}",
            b"[",
            b"nul",
            b"\"raw\ncontrol\"",
            b"\"\xff\"",
            b"{}",
            b"[]",
            b" [ ] ",
        ];
        for case in cases {
            let mut c = Cursor::new(case);
            let ours = c.skip_value().is_some() && c.at_end();
            let theirs = serde_json::from_slice::<serde::de::IgnoredAny>(case).is_ok();
            assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(case));
        }
    }
}
