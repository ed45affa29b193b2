//! The string memo of one `response_messages` pickle: each short string is written once per row, and every
//! later occurrence is a two-byte reference to it (pickle's `MEMOIZE` / `BINGET`), as Python's own pickler
//! shares repeated objects.
//!
//! The chunks of one stream repeat the same keys (`id`, `object`, `choices`, `delta`, …) and most of the same
//! values (`chatcmpl-7`, `chat.completion.chunk`, the model name); written once each, a 16-token row's pickle
//! is about a third of its size, and so are its base64, its SQLite pages and every later read of the table.
//! Unpickled, a reference is the very same `str` object, so the Python objects are equal to those of a
//! pickle without references.
//!
//! The table remembers where each memoised string's bytes lie in the pickle being written (so it keeps no
//! copies) and its memo index. It is cleared per row in O(1) (a generation number), open-addressed with
//! linear probing, and never more than half full, so a lookup always ends.

/// Shortest string worth a memo entry (a reference is two bytes; a one-byte string is three).
const MIN_LEN: usize = 2;

/// Longest string looked up (longer ones are rarely repeated and cost more to compare).
pub(super) const MAX_LEN: usize = 64;

/// Table slots (a power of two).
const SLOTS: usize = 4096;

/// Most strings memoised per row (half the slots, so probing always finds a free one quickly).
const MAX_ENTRIES: u32 = (SLOTS / 2) as u32;

#[derive(Clone, Copy, Default)]
struct Slot {
    /// The row generation this slot belongs to (older ones are empty).
    generation: u32,
    /// Memo index (the number of `MEMOIZE`s before it).
    index: u32,
    /// Where the string's bytes start in the pickle.
    pos: u32,
    /// Its length in bytes.
    len: u32,
}

/// What a lookup found.
pub(super) enum Lookup {
    /// Written before in this row: its memo index.
    Found(u32),
    /// Not written yet: the slot to remember it in (`None`: the table is full, write it without a memo
    /// entry).
    Vacant(Option<usize>),
    /// Too short or too long to memoise.
    Skip,
}

/// The memo table (reused across rows).
pub(super) struct Memo {
    slots: Vec<Slot>,
    generation: u32,
    /// `MEMOIZE`s written in this row (the next memo index).
    count: u32,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            slots: vec![Slot::default(); SLOTS],
            generation: 1,
            count: 0,
        }
    }
}

/// A little-endian word of up to eight bytes.
fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// Hash of a string of `MIN_LEN..=MAX_LEN` bytes: its length, first and last eight bytes.
fn hash(b: &[u8]) -> usize {
    let n = b.len();
    let (head, tail) = if n >= 8 {
        (word(&b[..8]), word(&b[n - 8..]))
    } else {
        (word(b), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ ((n as u64) << 57)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize & (SLOTS - 1)
}

impl Memo {
    /// Starts a new row: forgets every entry.
    pub(super) fn reset(&mut self) {
        self.forget();
        self.count = 0;
    }

    /// Forgets every entry but keeps counting indices from where the stream is (after a payload that was
    /// cut off: the entries may point into bytes no longer there, the `MEMOIZE`s before them still are).
    fn forget(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
    }

    /// The memo state before a payload, for [`Memo::rollback`].
    pub(super) fn mark(&self) -> u32 {
        self.count
    }

    /// Undoes a payload's entries after its output was cut off (it is then written another way).
    pub(super) fn rollback(&mut self, mark: u32) {
        if self.count != mark {
            self.count = mark;
            self.forget();
        }
    }

    /// Looks `s` up among the strings written in this row (`out` is the pickle written so far).
    #[inline]
    pub(super) fn lookup(&self, s: &[u8], out: &[u8]) -> Lookup {
        if !(MIN_LEN..=MAX_LEN).contains(&s.len()) {
            return Lookup::Skip;
        }
        let mut i = hash(s);
        loop {
            let slot = self.slots[i];
            if slot.generation != self.generation {
                return Lookup::Vacant((self.count < MAX_ENTRIES).then_some(i));
            }
            if slot.len as usize == s.len() {
                let at = slot.pos as usize;
                if out[at..at + s.len()] == *s {
                    return Lookup::Found(slot.index);
                }
            }
            i = (i + 1) & (SLOTS - 1);
        }
    }

    /// Remembers the string of `len` bytes just written at `pos` in vacant `slot`; returns its memo index,
    /// or `None` when `pos` is beyond what the table records (then no `MEMOIZE` may be written).
    #[inline]
    pub(super) fn insert(&mut self, slot: usize, pos: usize, len: usize) -> Option<u32> {
        let pos = u32::try_from(pos).ok()?;
        let index = self.count;
        self.slots[slot] = Slot {
            generation: self.generation,
            index,
            pos,
            len: len as u32,
        };
        self.count += 1;
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `s` as the encoder does (bytes at the end of `out`), returning the memo index it got.
    fn put(memo: &mut Memo, out: &mut Vec<u8>, s: &[u8]) -> Option<u32> {
        match memo.lookup(s, out) {
            Lookup::Found(i) => Some(i),
            Lookup::Vacant(slot) => {
                let pos = out.len();
                out.extend_from_slice(s);
                slot.and_then(|slot| memo.insert(slot, pos, s.len()))
            }
            Lookup::Skip => None,
        }
    }

    #[test]
    fn repeated_strings_get_their_first_index() {
        let mut memo = Memo::default();
        let mut out = Vec::new();
        assert_eq!(put(&mut memo, &mut out, b"id"), Some(0));
        assert_eq!(put(&mut memo, &mut out, b"x"), None, "too short");
        assert_eq!(put(&mut memo, &mut out, b"choices"), Some(1));
        assert_eq!(put(&mut memo, &mut out, b"id"), Some(0));
        assert_eq!(put(&mut memo, &mut out, &[b'a'; 65]), None, "too long");
        assert_eq!(put(&mut memo, &mut out, &[b'a'; 64]), Some(2));
        assert_eq!(put(&mut memo, &mut out, &[b'a'; 64]), Some(2));
        memo.reset();
        assert_eq!(put(&mut memo, &mut out, b"choices"), Some(0), "a new row");
    }

    /// Strings sharing length, first and last bytes (one hash) are still told apart.
    #[test]
    fn colliding_strings_are_compared_in_full() {
        let mut memo = Memo::default();
        let mut out = Vec::new();
        let strings: Vec<Vec<u8>> = (0..300u32)
            .map(|i| format!("abcdefgh-{i:05}-abcdefgh").into_bytes())
            .collect();
        for (i, s) in strings.iter().enumerate() {
            assert_eq!(put(&mut memo, &mut out, s), Some(i as u32));
        }
        for (i, s) in strings.iter().enumerate().rev() {
            assert_eq!(put(&mut memo, &mut out, s), Some(i as u32));
        }
    }

    #[test]
    fn a_full_table_stops_memoising_and_rollback_forgets() {
        let mut memo = Memo::default();
        let mut out = Vec::new();
        for i in 0..MAX_ENTRIES {
            assert_eq!(
                put(&mut memo, &mut out, format!("s{i}").as_bytes()),
                Some(i)
            );
        }
        assert_eq!(put(&mut memo, &mut out, b"one more"), None);
        assert_eq!(
            put(&mut memo, &mut out, b"s7"),
            Some(7),
            "old ones still found"
        );
        memo.reset();
        let mark = memo.mark();
        assert_eq!(put(&mut memo, &mut out, b"kept"), Some(0));
        memo.rollback(mark);
        assert_eq!(memo.mark(), 0);
        assert_eq!(
            put(&mut memo, &mut out, b"kept"),
            Some(0),
            "counted again from the mark"
        );
    }

    #[test]
    fn generation_wrap_clears_the_table() {
        let mut memo = Memo::default();
        let mut out = Vec::new();
        memo.generation = u32::MAX;
        assert_eq!(put(&mut memo, &mut out, b"stale"), Some(0));
        memo.reset();
        assert_eq!(memo.generation, 1);
        assert!(matches!(
            memo.lookup(b"stale", &out),
            Lookup::Vacant(Some(_))
        ));
    }
}
