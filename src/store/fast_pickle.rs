//! A direct JSON → pickle encoder for one payload, in one pass over the bytes with no intermediate tree:
//! the Python objects `json.loads` gives (dict keys in the server's order, JSON integers as `int`, fractions
//! as `float`, `null` as `None`, booleans as `bool`), in pickle protocol 4's compact opcodes — short strings
//! with a one-byte length, small integers in one or two bytes, and every string of `2..=64` bytes written
//! once per row and referenced after that ([`super::memo`]), as Python's own pickler writes them.
//!
//! It handles the JSON every server sends (objects, arrays, strings with any escapes, `true`/`false`/`null`,
//! numbers) and answers [`Unsupported`] for anything it would not decode exactly as the serde path of
//! [`super::pickle`] does (invalid JSON, lone surrogates, raw control characters, nesting deeper than 64);
//! the caller then cuts this payload's output off and uses the serde path for it, which decides as before.
//! Numbers other than short non-negative integers are read by `serde_json` itself, so every number becomes
//! the same Python `int` or `float`. The tests check the objects against the serde path's on generated
//! payloads (`store::pickle_vm`).

use super::memo::{Lookup, Memo};
use crate::jsonscan::{find_plain_end, find_special};

/// This payload needs the general (serde) path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unsupported;

type R = Result<(), Unsupported>;

// Pickle opcodes.
const MARK: u8 = b'(';
const EMPTY_LIST: u8 = b']';
const APPENDS: u8 = b'e';
const EMPTY_DICT: u8 = b'}';
const SETITEMS: u8 = b'u';
const BINUNICODE: u8 = b'X';
const SHORT_BINUNICODE: u8 = 0x8c;
const MEMOIZE: u8 = 0x94;
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';

/// Deepest nesting handled here (serde_json's own limit is 128; deeper payloads take the serde path).
const MAX_DEPTH: usize = 64;

/// Where the parser stands between two tokens of a payload: all it needs to go on, so a later payload that
/// begins with the same bytes can take over the pickle written for them and resume there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Checkpoint {
    /// Payload bytes consumed.
    pub i: usize,
    /// Pickle bytes written for them.
    pub out_len: usize,
    /// Memo entries they added (a payload may take over a prefix only where this is 0: the same strings
    /// then give the same references).
    pub memo_added: u32,
    /// Open containers, outermost first: bit `k` set when the `k`-th is a dict.
    dicts: u64,
    /// How many are open.
    depth: u32,
    /// The next token is a dict key (else a value).
    key: bool,
}

impl Checkpoint {
    /// Before the first byte.
    pub(super) const START: Checkpoint = Checkpoint {
        i: 0,
        out_len: 0,
        memo_added: 0,
        dicts: 0,
        depth: 0,
        key: false,
    };
}

/// Appends the opcodes of the one JSON value in `json` to `out`, memoising strings in `memo`, and records a
/// [`Checkpoint`] at the start of every token in `checkpoints`. With `from`, the pickle of `json[..from.i]`
/// is already at the end of `out` (taken over from a payload that began with the same bytes, whose
/// checkpoints up to `from` are in `checkpoints`) and parsing resumes there. On `Err`, `out` holds partial
/// output and `memo` entries the caller must cut off and roll back.
pub(super) fn encode(
    json: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    memo: &mut Memo,
    from: Option<Checkpoint>,
    checkpoints: &mut Vec<Checkpoint>,
) -> R {
    // Non-ASCII bytes can only sit inside strings (anywhere else the parser rejects them), and each string
    // is checked for UTF-8 as serde_json checks it.
    let at = from.unwrap_or(Checkpoint::START);
    let base = out.len() - at.out_len;
    let memo_base = memo.mark();
    let mut p = Parser {
        s: json,
        i: at.i,
        out,
        scratch,
        memo,
    };
    let (mut dicts, mut depth, mut key) = (at.dicts, at.depth, at.key);
    let mut resumed = from.is_some();
    loop {
        if !resumed {
            checkpoints.push(Checkpoint {
                i: p.i,
                out_len: p.out.len() - base,
                memo_added: p.memo.mark() - memo_base,
                dicts,
                depth,
                key,
            });
        }
        resumed = false;
        if key {
            if p.ws() != Some(b'"') {
                return Err(Unsupported);
            }
            p.string()?;
            if p.ws() != Some(b':') {
                return Err(Unsupported);
            }
            p.i += 1;
            key = false;
            continue;
        }
        match p.ws().ok_or(Unsupported)? {
            b'{' => {
                if depth as usize == MAX_DEPTH {
                    return Err(Unsupported);
                }
                p.i += 1;
                p.out.push(EMPTY_DICT);
                match p.ws() {
                    Some(b'}') => p.i += 1,
                    Some(b'"') => {
                        p.out.push(MARK);
                        dicts |= 1 << depth;
                        depth += 1;
                        key = true;
                        continue;
                    }
                    _ => return Err(Unsupported),
                }
            }
            b'[' => {
                if depth as usize == MAX_DEPTH {
                    return Err(Unsupported);
                }
                p.i += 1;
                p.out.push(EMPTY_LIST);
                if p.ws() == Some(b']') {
                    p.i += 1;
                } else {
                    p.out.push(MARK);
                    dicts &= !(1 << depth);
                    depth += 1;
                    continue;
                }
            }
            b'"' => p.string()?,
            b'n' => p.literal(b"null", NONE)?,
            b't' => p.literal(b"true", NEWTRUE)?,
            b'f' => p.literal(b"false", NEWFALSE)?,
            b'-' | b'0'..=b'9' => p.number()?,
            _ => return Err(Unsupported),
        }
        match p.close(dicts, &mut depth)? {
            Some(next_is_key) => key = next_is_key,
            None => return Ok(()),
        }
    }
}

/// A non-negative integer as Python's pickler writes it (`BININT1`, `BININT2`, `BININT`, else `LONG1`).
fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v < 0x100 {
        out.extend_from_slice(&[BININT1, v as u8]);
    } else if v < 0x1_0000 {
        out.push(BININT2);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 0x8000_0000 {
        out.push(BININT);
        out.extend_from_slice(&(v as u32).to_le_bytes());
    } else {
        // Little-endian two's complement, with a zero byte on top so it stays positive.
        out.extend_from_slice(&[LONG1, 9]);
        out.extend_from_slice(&v.to_le_bytes());
        out.push(0);
    }
}

/// A negative integer (or any `i64`).
fn put_i64(out: &mut Vec<u8>, v: i64) {
    if let Ok(u) = u64::try_from(v) {
        put_u64(out, u);
    } else if v >= -0x8000_0000 {
        out.push(BININT);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.extend_from_slice(&[LONG1, 8]);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// A `str` without a memo entry (`BINUNICODE`; used for payloads stored as text).
pub(super) fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(BINUNICODE);
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

/// A `str` (valid UTF-8): a reference when the row already holds it, else its bytes, memoised when short.
#[inline]
fn put_memo_str(out: &mut Vec<u8>, memo: &mut Memo, s: &[u8]) {
    let slot = match memo.lookup(s, out) {
        Lookup::Found(index) => {
            match u8::try_from(index) {
                Ok(i) => out.extend_from_slice(&[BINGET, i]),
                Err(_) => {
                    out.push(LONG_BINGET);
                    out.extend_from_slice(&index.to_le_bytes());
                }
            }
            return;
        }
        Lookup::Vacant(slot) => slot,
        Lookup::Skip => None,
    };
    match u8::try_from(s.len()) {
        Ok(n) => out.extend_from_slice(&[SHORT_BINUNICODE, n]),
        Err(_) => {
            out.push(BINUNICODE);
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
    }
    let pos = out.len();
    out.extend_from_slice(s);
    if let Some(slot) = slot {
        if memo.insert(slot, pos, s.len()).is_some() {
            out.push(MEMOIZE);
        }
    }
}

/// UTF-8 check with an ASCII fast path.
fn utf8(s: &[u8]) -> R {
    if s.is_ascii() || std::str::from_utf8(s).is_ok() {
        Ok(())
    } else {
        Err(Unsupported)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    out: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
    memo: &'a mut Memo,
}

impl Parser<'_> {
    /// After a complete value: closes the containers that end here (`dicts`/`depth` as in [`Checkpoint`]).
    /// `Some(key)`: another token follows, a dict key if `key`; `None`: the payload is complete.
    fn close(&mut self, dicts: u64, depth: &mut u32) -> Result<Option<bool>, Unsupported> {
        loop {
            if *depth == 0 {
                return match self.ws() {
                    None => Ok(None),
                    Some(_) => Err(Unsupported),
                };
            }
            let in_dict = (dicts >> (*depth - 1)) & 1 == 1;
            match self.ws() {
                Some(b',') => {
                    self.i += 1;
                    return Ok(Some(in_dict));
                }
                Some(b'}') if in_dict => self.out.push(SETITEMS),
                Some(b']') if !in_dict => self.out.push(APPENDS),
                _ => return Err(Unsupported),
            }
            self.i += 1;
            *depth -= 1;
        }
    }

    /// Skips whitespace; the next byte, if any.
    #[inline]
    fn ws(&mut self) -> Option<u8> {
        while let Some(&b) = self.s.get(self.i) {
            if b > b' ' || !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.i += 1;
        }
        None
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

    /// A string at `"`: its unescaped UTF-8 as a `str`.
    #[inline]
    fn string(&mut self) -> R {
        let start = self.i + 1;
        let end = start + find_plain_end(&self.s[start..]);
        if self.s.get(end) == Some(&b'"') {
            self.i = end + 1;
            put_memo_str(self.out, self.memo, &self.s[start..end]);
            return Ok(());
        }
        self.string_slow(start)
    }

    /// The rest of a string holding non-ASCII bytes, escapes or control characters.
    #[cold]
    fn string_slow(&mut self, start: usize) -> R {
        let plain = find_special(&self.s[start..]).ok_or(Unsupported)?;
        self.i = start + plain;
        match self.s[self.i] {
            b'"' => {
                let raw = &self.s[start..self.i];
                utf8(raw)?;
                put_memo_str(self.out, self.memo, raw);
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
            match *self.s.get(self.i).ok_or(Unsupported)? {
                b'"' => {
                    self.i += 1;
                    utf8(self.scratch)?;
                    put_memo_str(self.out, self.memo, self.scratch);
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
        // Fast path: a short non-negative integer without a leading zero, not followed by more of a number.
        let mut v = 0u64;
        let mut j = start;
        while let Some(d) = self.s.get(j).filter(|d| d.is_ascii_digit()) {
            v = v.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            j += 1;
        }
        let len = j - start;
        let more = matches!(self.s.get(j), Some(b'.' | b'e' | b'E' | b'-' | b'+'));
        if (1..=18).contains(&len) && (self.s[start] != b'0' || len == 1) && !more {
            self.i = j;
            put_u64(self.out, v);
            return Ok(());
        }
        self.number_general()
    }

    /// Any other number: serde_json decides int or float exactly as the serde path would.
    #[cold]
    fn number_general(&mut self) -> R {
        let start = self.i;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
        }
        let token = &self.s[start..self.i];
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
