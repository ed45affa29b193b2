//! A small, slow, obviously right unpickler for the tests: runs a pickle's opcodes (those the store's two
//! encoders and Python's pickler write for JSON-like data) on a stack and a memo, as `pickle.loads` does, and
//! gives the resulting Python object with its exact types, float bits and dict key order. The store's
//! encoders are checked against each other through it: equal objects, whatever the bytes.

use std::collections::HashMap;

/// A Python object built from JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    Int(i128),
    /// The float's bits (so `-0.0` and `0.0` differ, as their reprs do).
    Float(u64),
    Str(String),
    List(Vec<Py>),
    /// Entries in insertion order; a repeated key replaces the value in place, as in a Python dict.
    Dict(Vec<(Py, Py)>),
}

enum Item {
    Mark,
    Obj(Py),
}

fn le(b: &[u8]) -> i128 {
    // Little-endian two's complement of any length up to 16 bytes.
    let mut v: i128 = 0;
    for (k, &x) in b.iter().enumerate() {
        v |= i128::from(x) << (8 * k);
    }
    if let Some(&top) = b.last() {
        if top & 0x80 != 0 && b.len() < 16 {
            v -= 1i128 << (8 * b.len());
        }
    }
    v
}

/// Runs `pickle`; an error names the opcode or position that is not understood.
pub fn unpickle(pickle: &[u8]) -> Result<Py, String> {
    let mut stack: Vec<Item> = Vec::new();
    let mut memo: HashMap<u32, Py> = HashMap::new();
    let mut i = 0;
    let take = |i: &mut usize, n: usize| -> Result<&[u8], String> {
        let b = pickle.get(*i..*i + n).ok_or("truncated")?;
        *i += n;
        Ok(b)
    };
    let since_mark = |stack: &mut Vec<Item>| -> Result<Vec<Py>, String> {
        let at = stack
            .iter()
            .rposition(|x| matches!(x, Item::Mark))
            .ok_or("no mark")?;
        let items = stack.split_off(at + 1);
        stack.pop();
        items
            .into_iter()
            .map(|x| match x {
                Item::Obj(o) => Ok(o),
                Item::Mark => Err("mark".to_string()),
            })
            .collect()
    };
    let top = |stack: &mut Vec<Item>| -> Result<Py, String> {
        match stack.last() {
            Some(Item::Obj(o)) => Ok(o.clone()),
            _ => Err("empty stack".to_string()),
        }
    };
    loop {
        let op = *take(&mut i, 1)?.first().expect("one byte");
        let obj = match op {
            0x80 => {
                take(&mut i, 1)?;
                continue;
            }
            0x95 => {
                take(&mut i, 8)?;
                continue;
            }
            b'.' => {
                return match stack.pop() {
                    Some(Item::Obj(o)) if stack.is_empty() => Ok(o),
                    _ => Err("bad stack at STOP".into()),
                }
            }
            b'(' => {
                stack.push(Item::Mark);
                continue;
            }
            b']' => Py::List(Vec::new()),
            b'}' => Py::Dict(Vec::new()),
            b'N' => Py::None,
            0x88 => Py::Bool(true),
            0x89 => Py::Bool(false),
            b'K' => Py::Int(le(&[take(&mut i, 1)?[0], 0])),
            b'M' => Py::Int(le(&[take(&mut i, 2)?, &[0][..]].concat())),
            b'J' => Py::Int(le(take(&mut i, 4)?)),
            0x8a => {
                let n = take(&mut i, 1)?[0] as usize;
                if n > 16 {
                    return Err("long too long".into());
                }
                Py::Int(le(take(&mut i, n)?))
            }
            b'G' => {
                Py::Float(f64::from_be_bytes(take(&mut i, 8)?.try_into().expect("8")).to_bits())
            }
            b'X' | 0x8c => {
                let n = if op == b'X' {
                    u32::from_le_bytes(take(&mut i, 4)?.try_into().expect("4")) as usize
                } else {
                    take(&mut i, 1)?[0] as usize
                };
                let s = std::str::from_utf8(take(&mut i, n)?).map_err(|e| e.to_string())?;
                Py::Str(s.to_string())
            }
            0x94 => {
                let o = top(&mut stack)?;
                memo.insert(memo.len() as u32, o);
                continue;
            }
            b'q' | b'r' => {
                let k = if op == b'q' {
                    u32::from(take(&mut i, 1)?[0])
                } else {
                    u32::from_le_bytes(take(&mut i, 4)?.try_into().expect("4"))
                };
                let o = top(&mut stack)?;
                memo.insert(k, o);
                continue;
            }
            b'h' | b'j' => {
                let k = if op == b'h' {
                    u32::from(take(&mut i, 1)?[0])
                } else {
                    u32::from_le_bytes(take(&mut i, 4)?.try_into().expect("4"))
                };
                memo.get(&k).cloned().ok_or(format!("memo {k} unset"))?
            }
            b'a' | b'e' => {
                let items = if op == b'a' {
                    match stack.pop() {
                        Some(Item::Obj(o)) => vec![o],
                        _ => return Err("APPEND without item".into()),
                    }
                } else {
                    since_mark(&mut stack)?
                };
                match stack.last_mut() {
                    Some(Item::Obj(Py::List(l))) => l.extend(items),
                    _ => return Err("append to a non-list".into()),
                }
                continue;
            }
            b's' | b'u' => {
                let items = if op == b's' {
                    let v = stack.pop();
                    let k = stack.pop();
                    match (k, v) {
                        (Some(Item::Obj(k)), Some(Item::Obj(v))) => vec![k, v],
                        _ => return Err("SETITEM without a pair".into()),
                    }
                } else {
                    since_mark(&mut stack)?
                };
                if items.len() % 2 != 0 {
                    return Err("odd SETITEMS".into());
                }
                let Some(Item::Obj(Py::Dict(d))) = stack.last_mut() else {
                    return Err("setitems on a non-dict".into());
                };
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    match d.iter_mut().find(|(old, _)| *old == k) {
                        Some(entry) => entry.1 = v,
                        None => d.push((k, v)),
                    }
                }
                continue;
            }
            other => return Err(format!("opcode {other:#x} at {}", i - 1)),
        };
        stack.push(Item::Obj(obj));
    }
}

/// `base64` text → the object.
pub fn unpickle_b64(b64: &[u8]) -> Result<Py, String> {
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64)
        .map_err(|e| e.to_string())?;
    unpickle(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pickles written by Python 3.11 (`pickle.dumps(obj, protocol=p)`), decoded by hand.
    #[test]
    fn reads_what_python_writes() {
        // [{'a': 1, 'b': [None, True, 1.5, 'x', -2, 300, 70000, 2**40]}, 'a'] at protocol 4 (the second 'a'
        // is a reference to memo 2)
        let p4: &[u8] = b"\x80\x04\x95=\x00\x00\x00\x00\x00\x00\x00]\x94(}\x94(\x8c\x01a\x94K\x01\x8c\x01b\x94]\x94(N\x88G?\xf8\x00\x00\x00\x00\x00\x00\x8c\x01x\x94J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01euh\x02e.";
        let want = Py::List(vec![
            Py::Dict(vec![
                (Py::Str("a".into()), Py::Int(1)),
                (
                    Py::Str("b".into()),
                    Py::List(vec![
                        Py::None,
                        Py::Bool(true),
                        Py::Float(1.5f64.to_bits()),
                        Py::Str("x".into()),
                        Py::Int(-2),
                        Py::Int(300),
                        Py::Int(70000),
                        Py::Int(1 << 40),
                    ]),
                ),
            ]),
            Py::Str("a".into()),
        ]);
        assert_eq!(unpickle(p4), Ok(want));
        // ['k', 'k'] with a shared string at protocol 2: BINPUT / BINGET.
        let p2: &[u8] = b"\x80\x02]q\x00(X\x01\x00\x00\x00kq\x01h\x01e.";
        assert_eq!(
            unpickle(p2),
            Ok(Py::List(vec![Py::Str("k".into()), Py::Str("k".into())]))
        );
        assert!(unpickle(b"\x80\x04]\x94(Z.").is_err());
    }
}
