//! The fast path of [`super::openai_event::inspect`]: one pass over an event's bytes that reads only the
//! fields the record needs (`choices[0]` text / delta / message content, `usage`, `error`, `object`) and
//! skips the rest with `serde_json`'s own checks for ignored values.
//!
//! It answers `None` — and the caller runs the `serde_json` path, which decides — for anything it does not
//! reproduce exactly: invalid UTF-8 in a key or a value it reads, a top level that is not an object, escaped keys, duplicate keys it
//! reads, unexpected value types, reasoning details, numbers that are not plain non-negative integers.
//! Tool-call deltas (`tool_calls[].function.name` / `arguments`) are read here too, so a tool-calling
//! stream stays on this path. Common OpenAI-style chunks never take the slow path; the `serde_json` path and this one are
//! checked against each other in the tests.

use std::borrow::Cow;

use crate::jsonscan::Cursor;
use crate::record::Usage;

/// What one event contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventInfo {
    /// The payload was JSON (non-JSON events such as `[DONE]` are skipped).
    pub is_json: bool,
    /// An in-band error event.
    pub is_error: bool,
    /// `choices` was present and non-empty.
    pub has_choices: bool,
    /// The first choice carried output (text, reasoning, tool-call text).
    pub has_output: bool,
    /// The usage object, when present.
    pub usage: Option<Usage>,
    /// Not JSON, but meant to be: starts with `{`, or is not valid UTF-8.
    pub malformed: bool,
}

/// What a string value is, as far as `has_output` cares: absent/null, empty, or non-empty.
fn string_or_null(c: &mut Cursor<'_>) -> Option<Option<bool>> {
    if null(c)? {
        return Some(None);
    }
    match c.ws()? {
        b'"' => {
            let start = c.i;
            let (raw, escaped, ascii) = c.string_ascii()?;
            if !ascii {
                utf8(raw)?;
            }
            if escaped {
                // Escapes are checked by serde_json itself (a lone surrogate fails the whole event there).
                let text: Cow<'_, str> = serde_json::from_slice(&c.s[start..c.i]).ok()?;
                return Some(Some(!text.is_empty()));
            }
            Some(Some(!raw.is_empty()))
        }
        _ => None,
    }
}

/// serde_json checks UTF-8 in the strings it reads (keys, and the values it keeps), not in values it
/// skips; so does this path.
fn utf8(s: &[u8]) -> Option<()> {
    (s.is_ascii() || std::str::from_utf8(s).is_ok()).then_some(())
}

/// At `"`: a string without escapes (`None` for one with escapes, which the serde path decides), its
/// bytes checked as UTF-8 unless they are plain ASCII.
fn plain_string<'a>(c: &mut Cursor<'a>) -> Option<&'a [u8]> {
    let (raw, escaped, ascii) = c.string_ascii()?;
    if escaped {
        return None;
    }
    if !ascii {
        utf8(raw)?;
    }
    Some(raw)
}

/// `null`: consumed, `true`; anything else: untouched, `false`.
fn null(c: &mut Cursor<'_>) -> Option<bool> {
    if c.ws()? == b'n' {
        c.skip_value()?;
        return Some(true);
    }
    Some(false)
}

/// Calls `field` for each key of the object at the cursor (keys must be unescaped); `field` must consume
/// the value.
fn object<'a>(
    c: &mut Cursor<'a>,
    mut field: impl FnMut(&mut Cursor<'a>, &'a [u8]) -> Option<()>,
) -> Option<()> {
    c.expect(b'{')?;
    if c.ws()? == b'}' {
        c.i += 1;
        return Some(());
    }
    loop {
        c.ws()?;
        let key = plain_string(c)?;
        c.expect(b':')?;
        field(c, key)?;
        match c.ws()? {
            b',' => c.i += 1,
            b'}' => {
                c.i += 1;
                return Some(());
            }
            _ => return None,
        }
    }
}

/// Marks `key` seen; `None` on a second time (serde rejects duplicate fields).
fn once(seen: &mut u8, bit: u8) -> Option<()> {
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

/// `function` of a tool call: whether its `name` or `arguments` is a non-empty string.
fn function(c: &mut Cursor<'_>) -> Option<bool> {
    let mut out = false;
    let mut seen = 0u8;
    object(c, |c, key| {
        match key {
            b"name" | b"arguments" => {
                once(&mut seen, if key == b"name" { 1 } else { 2 })?;
                out |= string_or_null(c)?.unwrap_or(false);
            }
            _ => c.skip_value()?,
        }
        Some(())
    })?;
    Some(out)
}

/// A `tool_calls` list (the cursor at its `[`): whether a call's function carries a name or arguments.
/// Anything but a list of objects with object-or-null `function`s is left to the `serde_json` path.
fn tool_calls(c: &mut Cursor<'_>) -> Option<bool> {
    c.expect(b'[')?;
    let mut out = false;
    if c.ws()? == b']' {
        c.i += 1;
        return Some(false);
    }
    loop {
        if c.ws()? != b'{' {
            return None;
        }
        let mut seen = 0u8;
        object(c, |c, key| {
            if key == b"function" {
                once(&mut seen, 1)?;
                if !null(c)? {
                    if c.ws()? != b'{' {
                        return None;
                    }
                    out |= function(c)?;
                }
            } else {
                c.skip_value()?;
            }
            Some(())
        })?;
        match c.ws()? {
            b',' => c.i += 1,
            b']' => {
                c.i += 1;
                return Some(out);
            }
            _ => return None,
        }
    }
}

/// A `delta` / `message` object: whether it carries output.
fn delta(c: &mut Cursor<'_>) -> Option<bool> {
    let mut out = false;
    let mut seen = 0u8;
    object(c, |c, key| {
        match key {
            b"content" | b"reasoning_content" | b"reasoning" => {
                once(
                    &mut seen,
                    match key {
                        b"content" => 1,
                        b"reasoning_content" => 2,
                        _ => 4,
                    },
                )?;
                out |= string_or_null(c)?.unwrap_or(false);
            }
            b"tool_calls" => {
                once(&mut seen, 8)?;
                if !null(c)? {
                    out |= tool_calls(c)?;
                }
            }
            b"reasoning_details" => {
                if !null(c)? {
                    return None;
                }
            }
            _ => c.skip_value()?,
        }
        Some(())
    })?;
    Some(out)
}

/// The first element of `choices`: whether it carries output.
fn choice(c: &mut Cursor<'_>) -> Option<bool> {
    let mut out = false;
    let mut seen = 0u8;
    object(c, |c, key| {
        match key {
            b"text" => {
                once(&mut seen, 1)?;
                out |= string_or_null(c)?.unwrap_or(false);
            }
            b"delta" | b"message" => {
                once(&mut seen, if key == b"delta" { 2 } else { 4 })?;
                if !null(c)? {
                    if c.ws()? != b'{' {
                        return None;
                    }
                    out |= delta(c)?;
                }
            }
            _ => c.skip_value()?,
        }
        Some(())
    })?;
    Some(out)
}

/// A token count: a plain non-negative integer that fits `u64`, or `null`.
fn count(c: &mut Cursor<'_>) -> Option<Option<u64>> {
    if null(c)? {
        return Some(None);
    }
    let digits = c.number()?;
    if digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(Some(std::str::from_utf8(digits).ok()?.parse().ok()?))
}

fn usage(c: &mut Cursor<'_>) -> Option<Usage> {
    let mut u = Usage::default();
    let mut seen = 0u8;
    object(c, |c, key| {
        match key {
            b"prompt_tokens" => {
                once(&mut seen, 1)?;
                u.prompt_tokens = count(c)?;
            }
            b"completion_tokens" => {
                once(&mut seen, 2)?;
                u.completion_tokens = count(c)?;
            }
            b"prompt_tokens_details" => {
                once(&mut seen, 4)?;
                if !null(c)? {
                    if c.ws()? != b'{' {
                        return None;
                    }
                    let mut seen_cached = 0u8;
                    object(c, |c, key| {
                        if key == b"cached_tokens" {
                            once(&mut seen_cached, 1)?;
                            u.cached_tokens = count(c)?;
                        } else {
                            c.skip_value()?;
                        }
                        Some(())
                    })?;
                }
            }
            b"completion_tokens_details" => {
                once(&mut seen, 8)?;
                if !null(c)? {
                    if c.ws()? != b'{' {
                        return None;
                    }
                    let mut seen_reasoning = 0u8;
                    object(c, |c, key| {
                        if key == b"reasoning_tokens" {
                            once(&mut seen_reasoning, 1)?;
                            u.reasoning_tokens = count(c)?;
                        } else {
                            c.skip_value()?;
                        }
                        Some(())
                    })?;
                }
            }
            _ => c.skip_value()?,
        }
        Some(())
    })?;
    Some(u)
}

/// Classifies one event payload, or `None` when the `serde_json` path must decide.
pub(super) fn inspect(payload: &[u8]) -> Option<EventInfo> {
    inspect_from(payload, None, &mut |_| {})
}

/// The scan's state at the start of a top-level key: where, the keys read so far, what they gave.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct TopMark {
    /// Bytes of the payload consumed (just after `{` or a `,`).
    pub(super) i: usize,
    seen: u8,
    info: EventInfo,
}

/// As [`inspect`], calling `mark` with the state at the start of each top-level key. With `from`, taken
/// from a payload with the same bytes before `from.i`, the scan resumes there: it gives exactly what a scan
/// from the start would.
pub(super) fn inspect_from(
    payload: &[u8],
    from: Option<TopMark>,
    mark: &mut impl FnMut(TopMark),
) -> Option<EventInfo> {
    let mut c = Cursor::new(payload);
    let (mut info, mut seen) = match from {
        Some(m) => {
            c.i = m.i;
            (m.info, m.seen)
        }
        None => {
            c.expect(b'{')?;
            let info = EventInfo {
                is_json: true,
                ..EventInfo::default()
            };
            if c.ws()? == b'}' {
                c.i += 1;
                return c.at_end().then_some(info);
            }
            mark(TopMark {
                i: c.i,
                seen: 0,
                info,
            });
            (info, 0)
        }
    };
    loop {
        c.ws()?;
        let key = plain_string(&mut c)?;
        c.expect(b':')?;
        top_field(&mut c, key, &mut info, &mut seen)?;
        match c.ws()? {
            b',' => {
                c.i += 1;
                mark(TopMark { i: c.i, seen, info });
            }
            b'}' => {
                c.i += 1;
                return c.at_end().then_some(info);
            }
            _ => return None,
        }
    }
}

/// One top-level field (the cursor after its `:`): the value read into `info` or skipped.
fn top_field(c: &mut Cursor<'_>, key: &[u8], info: &mut EventInfo, seen: &mut u8) -> Option<()> {
    match key {
        b"choices" => {
            once(seen, 1)?;
            if !null(c)? {
                c.expect(b'[')?;
                if c.ws()? == b']' {
                    c.i += 1;
                    return Some(());
                }
                if c.ws()? != b'{' {
                    return None;
                }
                info.has_choices = true;
                info.has_output = choice(c)?;
                loop {
                    match c.ws()? {
                        b',' => {
                            c.i += 1;
                            c.skip_value()?;
                        }
                        b']' => {
                            c.i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
        }
        b"usage" => {
            once(seen, 2)?;
            if !null(c)? {
                if c.ws()? != b'{' {
                    return None;
                }
                info.usage = Some(usage(c)?);
            }
        }
        b"error" => {
            once(seen, 4)?;
            if !null(c)? {
                c.skip_value()?;
                info.is_error = true;
            }
        }
        b"object" => {
            once(seen, 8)?;
            if !null(c)? {
                if c.ws()? != b'"' {
                    return None;
                }
                let value = plain_string(c)?;
                info.is_error |= value == b"error";
            }
        }
        _ => c.skip_value()?,
    }
    Some(())
}

#[cfg(test)]
mod tests;
