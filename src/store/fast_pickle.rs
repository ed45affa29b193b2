//! A direct JSON → pickle encoder for one payload: the exact opcodes `serde_transcode` from `serde_json`
//! into `serde_pickle` (protocol 3) produces, in one pass over the bytes with no intermediate calls, so the
//! store thread spends a fraction of the time per response chunk.
//!
//! It handles the JSON every server sends (objects, arrays, strings with any escapes, `true`/`false`/`null`,
//! numbers) and answers [`Unsupported`] for anything it would not encode exactly as the serde path does
//! (invalid JSON, lone surrogates, raw control characters, nesting deeper than 64); the caller then falls
//! back to the serde path for that payload, which decides as before. Numbers other than short non-negative
//! integers are read by `serde_json` itself, so every number becomes the same Python `int` or `float`.

/// This payload needs the general (serde) path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unsupported;

type R = Result<(), Unsupported>;

// Pickle opcodes (protocol ≤ 3), as serde_pickle writes them.
const MARK: u8 = b'(';
const EMPTY_LIST: u8 = b']';
const APPENDS: u8 = b'e';
const EMPTY_DICT: u8 = b'}';
const SETITEMS: u8 = b'u';
const BINUNICODE: u8 = b'X';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';

/// serde_pickle closes a batch of list items / dict entries every this many, as Python's pickle does.
const BATCH: usize = 1000;

/// Deepest nesting handled here (serde_json's own limit is 128; deeper payloads take the serde path).
const MAX_DEPTH: usize = 64;

/// Appends the opcodes of the one JSON value in `json` to `out`. On `Err`, `out` holds partial output
/// the caller must cut off.
pub(super) fn encode(json: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> R {
    // One check for the whole payload: every string inside is then valid UTF-8 too (its bounds are ASCII
    // quotes), as serde_json requires.
    std::str::from_utf8(json).map_err(|_| Unsupported)?;
    let mut p = Parser {
        s: json,
        i: 0,
        out,
        scratch,
    };
    p.value(0)?;
    p.ws();
    if p.i == p.s.len() {
        Ok(())
    } else {
        Err(Unsupported)
    }
}

/// `serialize_u64` of serde_pickle.
pub(super) fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v < 0x8000_0000 {
        out.push(BININT);
        out.extend_from_slice(&(v as u32).to_le_bytes());
    } else {
        out.push(LONG1);
        out.push(9);
        out.extend_from_slice(&v.to_le_bytes());
        out.push(0);
    }
}

/// `serialize_i64` of serde_pickle.
fn put_i64(out: &mut Vec<u8>, v: i64) {
    if (-0x8000_0000..0x8000_0000).contains(&v) {
        out.push(BININT);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(LONG1);
        out.push(8);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// `serialize_str` of serde_pickle.
pub(super) fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(BINUNICODE);
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

/// The first `"`, `\\` or control character (< 0x20) in `s`, eight bytes at a time.
fn find_special(s: &[u8]) -> Option<usize> {
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

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    out: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn literal(&mut self, word: &[u8], opcode: u8) -> R {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            self.out.push(opcode);
            Ok(())
        } else {
            Err(Unsupported)
        }
    }

    fn value(&mut self, depth: usize) -> R {
        self.ws();
        match self.peek().ok_or(Unsupported)? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string(),
            b't' => self.literal(b"true", NEWTRUE),
            b'f' => self.literal(b"false", NEWFALSE),
            b'n' => self.literal(b"null", NONE),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Unsupported),
        }
    }

    fn array(&mut self, depth: usize) -> R {
        if depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        self.i += 1;
        self.out.extend_from_slice(&[EMPTY_LIST, MARK]);
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.out.push(APPENDS);
            return Ok(());
        }
        let mut batch = 0;
        loop {
            self.value(depth)?;
            batch += 1;
            if batch == BATCH {
                self.out.extend_from_slice(&[APPENDS, MARK]);
                batch = 0;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    self.out.push(APPENDS);
                    return Ok(());
                }
                _ => return Err(Unsupported),
            }
        }
    }

    fn object(&mut self, depth: usize) -> R {
        if depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        self.i += 1;
        self.out.extend_from_slice(&[EMPTY_DICT, MARK]);
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.out.push(SETITEMS);
            return Ok(());
        }
        let mut batch = 0;
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(Unsupported);
            }
            self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(Unsupported);
            }
            self.i += 1;
            self.value(depth)?;
            batch += 1;
            if batch == BATCH {
                self.out.extend_from_slice(&[SETITEMS, MARK]);
                batch = 0;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.out.push(SETITEMS);
                    return Ok(());
                }
                _ => return Err(Unsupported),
            }
        }
    }

    /// A string at `"`: its unescaped UTF-8 as `BINUNICODE`.
    fn string(&mut self) -> R {
        self.i += 1;
        let start = self.i;
        let plain = find_special(&self.s[start..]).ok_or(Unsupported)?;
        self.i = start + plain;
        match self.s[self.i] {
            b'"' => {
                put_str(self.out, &self.s[start..self.i]);
                self.i += 1;
                return Ok(());
            }
            b'\\' => {}
            _ => return Err(Unsupported),
        }
        // Escapes: build the text in `scratch`.
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.s[start..self.i]);
        loop {
            match self.peek().ok_or(Unsupported)? {
                b'"' => {
                    self.i += 1;
                    put_str(self.out, self.scratch);
                    return Ok(());
                }
                b'\\' => {
                    let esc = *self.s.get(self.i + 1).ok_or(Unsupported)?;
                    self.i += 2;
                    let byte = match esc {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode_escape()?;
                            let mut buf = [0u8; 4];
                            self.scratch
                                .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            continue;
                        }
                        _ => return Err(Unsupported),
                    };
                    self.scratch.push(byte);
                }
                0..=0x1f => return Err(Unsupported),
                b => {
                    self.scratch.push(b);
                    self.i += 1;
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Unsupported> {
        let digits = self.s.get(self.i..self.i + 4).ok_or(Unsupported)?;
        let mut v = 0u32;
        for d in digits {
            v = v * 16 + (*d as char).to_digit(16).ok_or(Unsupported)?;
        }
        self.i += 4;
        Ok(v)
    }

    /// After `\u`: one code point, a surrogate pair joined; a lone surrogate is left to serde.
    fn unicode_escape(&mut self) -> Result<char, Unsupported> {
        let first = self.hex4()?;
        match first {
            0xD800..=0xDBFF => {
                if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                    return Err(Unsupported);
                }
                self.i += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(Unsupported);
                }
                let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                char::from_u32(c).ok_or(Unsupported)
            }
            0xDC00..=0xDFFF => Err(Unsupported),
            c => char::from_u32(c).ok_or(Unsupported),
        }
    }

    fn number(&mut self) -> R {
        let start = self.i;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.peek() {
            self.i += 1;
        }
        let token = &self.s[start..self.i];
        // Fast path: a short non-negative integer without a leading zero.
        if token.len() <= 18
            && token.iter().all(u8::is_ascii_digit)
            && (token[0] != b'0' || token.len() == 1)
        {
            let v = token
                .iter()
                .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
            put_u64(self.out, v);
            return Ok(());
        }
        // Anything else: serde_json decides int or float exactly as the serde path would.
        let n: serde_json::Number = serde_json::from_slice(token).map_err(|_| Unsupported)?;
        if let Some(u) = n.as_u64() {
            put_u64(self.out, u);
        } else if let Some(i) = n.as_i64() {
            put_i64(self.out, i);
        } else {
            let f = n.as_f64().ok_or(Unsupported)?;
            self.out.push(BINFLOAT);
            self.out.extend_from_slice(&f.to_be_bytes());
        }
        Ok(())
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
                    let mut s = vec![b'a'; len];
                    // Bytes that look close to the specials must not be taken for them.
                    for (i, b) in s.iter_mut().enumerate() {
                        *b = [b'a', 0x20, 0x21, 0x5b, 0x5d, 0xc3, 0xa9, 0xff][i % 8];
                    }
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
}
