//! The ModelScope login the `modelscope` client saves (`modelscope login`): a pickled `requests` cookie jar
//! at `$MODELSCOPE_HOME/credentials/cookies` (else `~/.modelscope/credentials/cookies`) whose
//! `m_session_id` cookie holds the access token. The client uses it when `MODELSCOPE_API_TOKEN` is not set,
//! and ignores it once the cookie has expired; so does llmperf.
//!
//! Only the pickle opcodes such a jar uses are read (strings, small ints, containers, memo references);
//! anything else ends the scan and counts as no login. Nothing is executed.

use std::path::PathBuf;

use super::{env_path, home};

/// The saved login's file.
pub fn cookies_file() -> Option<PathBuf> {
    env_path("MODELSCOPE_HOME")
        .or_else(|| home().map(|h| h.join(".modelscope")))
        .map(|d| d.join("credentials/cookies"))
}

/// The token of the saved login, when there is one that has not expired at `now_s` (Unix seconds).
pub fn saved_token(now_s: i64) -> Option<String> {
    let bytes = std::fs::read(cookies_file()?).ok()?;
    session_token(&bytes, now_s)
}

/// One value the scan keeps: a string, an integer, or anything else.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Int(i64),
    Other,
}

/// The `m_session_id` value of a pickled cookie jar, unless it expired before `now_s`.
pub fn session_token(pickle: &[u8], now_s: i64) -> Option<String> {
    let toks = tokens(pickle);
    let at = toks
        .windows(2)
        .position(|w| w[0] == Tok::Str("name".into()) && w[1] == Tok::Str("m_session_id".into()))?;
    let after = |key: &str| {
        toks[at..]
            .windows(2)
            .find(|w| w[0] == Tok::Str(key.into()))
            .map(|w| w[1].clone())
    };
    let Some(Tok::Str(value)) = after("value") else {
        return None;
    };
    if let Some(Tok::Int(expires_s)) = after("expires") {
        if expires_s <= now_s {
            return None;
        }
    }
    (!value.is_empty()).then_some(value)
}

fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(s)
}

fn uint(data: &[u8], pos: &mut usize, n: usize) -> Option<u64> {
    let b = take(data, pos, n)?;
    Some(
        b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    )
}

/// The values pushed by the opcodes of `data`, in order (memo references resolved), up to the first
/// opcode the scan does not know.
fn tokens(data: &[u8]) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::new();
    let mut memo: Vec<Tok> = Vec::new();
    let mut pos = 0;
    while let Some(&op) = data.get(pos) {
        pos += 1;
        let pushed = match op {
            0x80 => take(data, &mut pos, 1).map(|_| None),
            0x95 => take(data, &mut pos, 8).map(|_| None),
            0x8c => uint(data, &mut pos, 1).and_then(|n| string(data, &mut pos, n)),
            b'X' => uint(data, &mut pos, 4).and_then(|n| string(data, &mut pos, n)),
            0x8d => uint(data, &mut pos, 8).and_then(|n| string(data, &mut pos, n)),
            b'K' => uint(data, &mut pos, 1).map(|v| Some(Tok::Int(v as i64))),
            b'M' => uint(data, &mut pos, 2).map(|v| Some(Tok::Int(v as i64))),
            b'J' => uint(data, &mut pos, 4).map(|v| Some(Tok::Int(i64::from(v as u32 as i32)))),
            0x8a => uint(data, &mut pos, 1).and_then(|n| long(data, &mut pos, n as usize)),
            b'G' => take(data, &mut pos, 8).map(|_| Some(Tok::Other)),
            0x94 => {
                memo.push(out.last().cloned().unwrap_or(Tok::Other));
                Some(None)
            }
            b'q' => uint(data, &mut pos, 1).map(|_| {
                memo.push(out.last().cloned().unwrap_or(Tok::Other));
                None
            }),
            b'r' => uint(data, &mut pos, 4).map(|_| {
                memo.push(out.last().cloned().unwrap_or(Tok::Other));
                None
            }),
            b'h' => uint(data, &mut pos, 1).map(|i| memo.get(i as usize).cloned()),
            b'j' => uint(data, &mut pos, 4).map(|i| memo.get(i as usize).cloned()),
            // Containers, constants and builders: a value the scan does not look into.
            0x93 | b')' | 0x81 | b'}' | b']' | b'(' | 0x88 | 0x89 | b'N' | 0x85 | 0x86 | 0x87
            | b'u' | b's' | b'b' | b'e' | b'a' | b't' | b'l' | b'd' | b'R' | 0x8f | 0x90 => {
                Some(Some(Tok::Other))
            }
            b'.' => break,
            _ => break,
        };
        match pushed {
            Some(Some(t)) => out.push(t),
            Some(None) => {}
            None => break,
        }
    }
    out
}

fn string(data: &[u8], pos: &mut usize, n: u64) -> Option<Option<Tok>> {
    let b = take(data, pos, usize::try_from(n).ok()?)?;
    Some(Some(Tok::Str(String::from_utf8_lossy(b).into_owned())))
}

fn long(data: &[u8], pos: &mut usize, n: usize) -> Option<Option<Tok>> {
    let b = take(data, pos, n)?;
    if n == 0 || n > 8 {
        return Some(Some(Tok::Other));
    }
    let mut v: i64 = 0;
    for (i, &x) in b.iter().enumerate() {
        v |= i64::from(x) << (8 * i);
    }
    if n < 8 && b[n - 1] & 0x80 != 0 {
        v -= 1i64 << (8 * n);
    }
    Some(Some(Tok::Int(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cookie jar as `HubConfig.save_token('ms-secret-xyz')` of modelscope 1.40 pickles it (protocol 4),
    /// cut to the cookie's fields: the name repeats through a memo reference, expiry 2_000_000_000.
    fn jar(expires: u32) -> Vec<u8> {
        let mut p = vec![0x80, 4];
        let s = |p: &mut Vec<u8>, text: &str| {
            p.push(0x8c);
            p.push(text.len() as u8);
            p.extend_from_slice(text.as_bytes());
            p.push(0x94);
        };
        s(&mut p, "m_session_id"); // memo 0: the dict key
        p.extend_from_slice(b"}(");
        s(&mut p, "version");
        p.extend_from_slice(&[b'K', 0]);
        s(&mut p, "name");
        p.extend_from_slice(&[b'h', 0]);
        s(&mut p, "value");
        s(&mut p, "ms-secret-xyz");
        s(&mut p, "expires");
        p.push(b'J');
        p.extend_from_slice(&expires.to_le_bytes());
        p.extend_from_slice(b"ub.");
        p
    }

    #[test]
    fn the_session_token_is_read_until_it_expires() {
        assert_eq!(
            session_token(&jar(2_000_000_000), 1_900_000_000).as_deref(),
            Some("ms-secret-xyz")
        );
        assert_eq!(session_token(&jar(2_000_000_000), 2_000_000_001), None);
        assert_eq!(session_token(b"not a pickle", 0), None);
    }

    #[test]
    fn jars_pickled_by_python_are_read() {
        let now_s = 1_800_000_000;
        let saved = include_bytes!("../../tests/fixtures/modelscope/cookies");
        assert_eq!(
            session_token(saved, now_s).as_deref(),
            Some("ms-saved-login-token")
        );
        let expired = include_bytes!("../../tests/fixtures/modelscope/cookies-expired");
        assert_eq!(session_token(expired, now_s), None);
    }
}
