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
    let mut vm = Vm {
        pickle,
        i: 0,
        stack: Vec::new(),
        memo: HashMap::new(),
    };
    loop {
        if let Some(done) = vm.step()? {
            return Ok(done);
        }
    }
}

/// The machine: the input and where it is read, the stack and the memo.
struct Vm<'a> {
    pickle: &'a [u8],
    i: usize,
    stack: Vec<Item>,
    memo: HashMap<u32, Py>,
}

impl<'a> Vm<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let b = self.pickle.get(self.i..self.i + n).ok_or("truncated")?;
        self.i += n;
        Ok(b)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32_le(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    /// The objects above the topmost mark, which is removed.
    fn since_mark(&mut self) -> Result<Vec<Py>, String> {
        let at = self
            .stack
            .iter()
            .rposition(|x| matches!(x, Item::Mark))
            .ok_or("no mark")?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        items
            .into_iter()
            .map(|x| match x {
                Item::Obj(o) => Ok(o),
                Item::Mark => Err("mark".to_string()),
            })
            .collect()
    }

    fn pop_obj(&mut self) -> Option<Py> {
        match self.stack.pop() {
            Some(Item::Obj(o)) => Some(o),
            _ => None,
        }
    }

    fn top(&self) -> Result<Py, String> {
        match self.stack.last() {
            Some(Item::Obj(o)) => Ok(o.clone()),
            _ => Err("empty stack".to_string()),
        }
    }

    /// Runs one opcode; the result at `STOP`.
    fn step(&mut self) -> Result<Option<Py>, String> {
        let op = self.byte()?;
        match op {
            // PROTO, FRAME: nothing to build.
            0x80 => drop(self.take(1)?),
            0x95 => drop(self.take(8)?),
            b'.' => {
                return match self.pop_obj() {
                    Some(o) if self.stack.is_empty() => Ok(Some(o)),
                    _ => Err("bad stack at STOP".into()),
                }
            }
            b'(' => self.stack.push(Item::Mark),
            0x94 | b'q' | b'r' => self.memoize(op)?,
            b'a' | b'e' => self.append(op)?,
            b's' | b'u' => self.set_items(op)?,
            _ => {
                let obj = self.atom(op)?;
                self.stack.push(Item::Obj(obj));
            }
        }
        Ok(None)
    }

    /// An opcode that pushes one object: an empty container, a scalar, a string, a memo read.
    fn atom(&mut self, op: u8) -> Result<Py, String> {
        Ok(match op {
            b']' => Py::List(Vec::new()),
            b'}' => Py::Dict(Vec::new()),
            b'N' => Py::None,
            0x88 => Py::Bool(true),
            0x89 => Py::Bool(false),
            b'K' => Py::Int(le(&[self.byte()?, 0])),
            b'M' => Py::Int(le(&[self.take(2)?, &[0][..]].concat())),
            b'J' => Py::Int(le(self.take(4)?)),
            0x8a => {
                let n = self.byte()? as usize;
                if n > 16 {
                    return Err("long too long".into());
                }
                Py::Int(le(self.take(n)?))
            }
            b'G' => Py::Float(f64::from_be_bytes(self.take(8)?.try_into().expect("8")).to_bits()),
            b'X' | 0x8c => {
                let n = if op == b'X' {
                    self.u32_le()? as usize
                } else {
                    self.byte()? as usize
                };
                let s = std::str::from_utf8(self.take(n)?).map_err(|e| e.to_string())?;
                Py::Str(s.to_string())
            }
            b'h' | b'j' => {
                let k = if op == b'h' {
                    u32::from(self.byte()?)
                } else {
                    self.u32_le()?
                };
                self.memo
                    .get(&k)
                    .cloned()
                    .ok_or(format!("memo {k} unset"))?
            }
            other => return Err(format!("opcode {other:#x} at {}", self.i - 1)),
        })
    }

    /// `MEMOIZE` (the next index), `BINPUT`, `LONG_BINPUT`: the top object into the memo.
    fn memoize(&mut self, op: u8) -> Result<(), String> {
        let k = match op {
            0x94 => self.memo.len() as u32,
            b'q' => u32::from(self.byte()?),
            _ => self.u32_le()?,
        };
        let o = self.top()?;
        self.memo.insert(k, o);
        Ok(())
    }

    /// `APPEND` (one object), `APPENDS` (those above the mark) onto the list below them.
    fn append(&mut self, op: u8) -> Result<(), String> {
        let items = if op == b'a' {
            vec![self.pop_obj().ok_or("APPEND without item")?]
        } else {
            self.since_mark()?
        };
        match self.stack.last_mut() {
            Some(Item::Obj(Py::List(l))) => l.extend(items),
            _ => return Err("append to a non-list".into()),
        }
        Ok(())
    }

    /// `SETITEM` (one pair), `SETITEMS` (the pairs above the mark) into the dict below them; a repeated
    /// key replaces the value in place.
    fn set_items(&mut self, op: u8) -> Result<(), String> {
        let items = if op == b's' {
            let v = self.pop_obj();
            let k = self.pop_obj();
            match (k, v) {
                (Some(k), Some(v)) => vec![k, v],
                _ => return Err("SETITEM without a pair".into()),
            }
        } else {
            self.since_mark()?
        };
        if items.len() % 2 != 0 {
            return Err("odd SETITEMS".into());
        }
        let Some(Item::Obj(Py::Dict(d))) = self.stack.last_mut() else {
            return Err("setitems on a non-dict".into());
        };
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            match d.iter_mut().find(|(old, _)| *old == k) {
                Some(entry) => entry.1 = v,
                None => d.push((k, v)),
            }
        }
        Ok(())
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
