//! Exact order statistics in bounded memory: [`SortedSpill`] keeps a column of floats in a fixed-size
//! buffer; when it fills, the buffer is sorted and written as one sorted run to an anonymous temporary file
//! ([`SpillFile`], unlinked at creation, so nothing is left behind even if the process dies). At the end the
//! runs and the buffer are merged (stably: equal values keep their arrival order, like Python's
//! `list.sort`), and the values at the nearest ranks are picked as they stream past. The result is the
//! same as sorting every value in memory, bit for bit; memory is the buffer plus one read buffer per run
//! merged at once ([`MAX_FAN_IN`]); disk is 8 bytes per value.
//!
//! A short run never touches the disk. If a temporary file cannot be created or written, the column keeps
//! its values in memory from then on (exact, no longer flat) and says so once in the log.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::nearest_rank::{nearest_rank, PERCENTILES};

/// Values a column holds in memory before it writes a sorted run (64 KiB of `f64`).
pub const DEFAULT_SPILL_VALUES: usize = 1 << 13;

/// Most runs merged at once; more are first merged in groups into longer runs.
const MAX_FAN_IN: usize = 64;

/// Values read from a run at a time while merging (64 KiB).
const READ_VALUES: usize = 8192;

/// An anonymous, append-only temporary file of fixed-size records, created on first write in `dir` (or
/// the system's temporary folder).
#[derive(Debug)]
pub(crate) struct SpillFile {
    dir: Option<Arc<PathBuf>>,
    file: Option<File>,
    len_bytes: u64,
}

impl SpillFile {
    /// A file that will be created in `dir` (`None`: the system's temporary folder) on the first write.
    pub fn new(dir: Option<Arc<PathBuf>>) -> SpillFile {
        SpillFile {
            dir,
            file: None,
            len_bytes: 0,
        }
    }

    /// Appends `bytes`; returns the offset they were written at.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        if self.file.is_none() {
            self.file = Some(match self.dir.as_deref() {
                Some(dir) => tempfile::tempfile_in(dir)?,
                None => tempfile::tempfile()?,
            });
        }
        let file = self.file.as_mut().expect("created above");
        file.write_all(bytes)?;
        let at = self.len_bytes;
        self.len_bytes += bytes.len() as u64;
        Ok(at)
    }

    /// Fills `buf` from `offset` (the range must have been written).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.file {
            Some(f) => f.read_exact_at(buf, offset),
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "nothing spilled",
            )),
        }
    }

    /// Bytes written so far.
    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
}

/// Logs the first spill failure of the process (the run goes on with the values in memory).
pub(crate) fn warn_spill_failed(what: &str, e: &io::Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "could not write {what} to a temporary file ({e}); keeping them in memory for the rest of the run"
        );
    });
}

/// A sorted run: `len` values from value index `start` of the spill file.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    len: u64,
}

/// One column of non-NaN floats, for exact nearest-rank percentiles in bounded memory.
#[derive(Debug)]
pub(crate) struct SortedSpill {
    cap: usize,
    buf: Vec<f64>,
    file: SpillFile,
    runs: Vec<Run>,
    in_memory_only: bool,
    count: u64,
}

fn sort_stable(values: &mut [f64]) {
    // -0.0 == 0.0 and ties keep their order, exactly like Python's `list.sort()` on floats.
    values.sort_by(|a, b| a.partial_cmp(b).expect("NaNs are never kept"));
}

fn to_bytes(values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 8);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

impl SortedSpill {
    /// An empty column holding at most `cap` values in memory, spilling to `dir`.
    pub fn new(cap: usize, dir: Option<Arc<PathBuf>>) -> SortedSpill {
        SortedSpill {
            cap: cap.max(1),
            buf: Vec::new(),
            file: SpillFile::new(dir),
            runs: Vec::new(),
            in_memory_only: false,
            count: 0,
        }
    }

    /// Adds one value; NaN is dropped (evalscope's percentiles drop it too).
    pub fn push(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        self.buf.push(v);
        self.count += 1;
        if self.buf.len() >= self.cap && !self.in_memory_only {
            self.spill();
        }
    }

    /// Bytes written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        self.file.len_bytes()
    }

    /// Values kept (NaN excluded).
    pub fn count(&self) -> u64 {
        self.count
    }

    fn spill(&mut self) {
        sort_stable(&mut self.buf);
        match self.file.append(&to_bytes(&self.buf)) {
            Ok(at) => {
                self.runs.push(Run {
                    start: at / 8,
                    len: self.buf.len() as u64,
                });
                self.buf.clear();
            }
            Err(e) => {
                warn_spill_failed("percentile samples", &e);
                self.in_memory_only = true;
            }
        }
    }

    /// The raw (unrounded) nearest-rank value at each of [`PERCENTILES`]; NaN when empty.
    pub fn percentiles(&self) -> [f64; 11] {
        let mut tail = self.buf.clone();
        sort_stable(&mut tail);
        if self.runs.is_empty() {
            return PERCENTILES.map(|p| nearest_rank(&tail, p));
        }
        match self.merged_percentiles(&tail) {
            Ok(values) => values,
            Err(e) => {
                // The file was written by this process a moment ago; failing to read it back is an I/O
                // fault the run cannot recover exact values from.
                tracing::error!("reading spilled percentile samples back failed: {e}");
                [f64::NAN; 11]
            }
        }
    }

    fn merged_percentiles(&self, tail: &[f64]) -> io::Result<[f64; 11]> {
        let (file, runs) = self.reduce_runs()?;
        let file = file.as_ref().unwrap_or(&self.file);
        let runs = runs.as_deref().unwrap_or(&self.runs);
        let n = self.count as usize;
        // Index of each percentile's value in the sorted sequence (nearest_rank's formula).
        let targets: [usize; 11] = PERCENTILES.map(|p| {
            if p >= 100 {
                n - 1
            } else {
                (n * p as usize).div_ceil(100).saturating_sub(1)
            }
        });
        let mut out = [f64::NAN; 11];
        let mut next = 0;
        let mut merge = Merge::new(file, runs, tail)?;
        let mut i = 0usize;
        while next < targets.len() {
            let Some(v) = merge.next_value()? else { break };
            while next < targets.len() && targets[next] == i {
                out[next] = v;
                next += 1;
            }
            i += 1;
        }
        Ok(out)
    }

    /// Merges groups of runs into longer runs (in a new file) until at most [`MAX_FAN_IN`] remain;
    /// `(None, None)` when they already do.
    #[allow(clippy::type_complexity)]
    fn reduce_runs(&self) -> io::Result<(Option<SpillFile>, Option<Vec<Run>>)> {
        if self.runs.len() <= MAX_FAN_IN {
            return Ok((None, None));
        }
        let mut file: Option<SpillFile> = None;
        let mut runs = self.runs.clone();
        while runs.len() > MAX_FAN_IN {
            let src = file.as_ref().unwrap_or(&self.file);
            let mut dst = SpillFile::new(self.file.dir.clone());
            let mut merged = Vec::new();
            for group in runs.chunks(MAX_FAN_IN) {
                let mut merge = Merge::new(src, group, &[])?;
                let start = dst.len_bytes() / 8;
                let mut out: Vec<f64> = Vec::with_capacity(READ_VALUES);
                let mut len = 0u64;
                while let Some(v) = merge.next_value()? {
                    out.push(v);
                    if out.len() == READ_VALUES {
                        dst.append(&to_bytes(&out))?;
                        len += out.len() as u64;
                        out.clear();
                    }
                }
                if !out.is_empty() {
                    dst.append(&to_bytes(&out))?;
                    len += out.len() as u64;
                }
                merged.push(Run { start, len });
            }
            runs = merged;
            file = Some(dst);
        }
        Ok((file, Some(runs)))
    }
}

/// A run being read in blocks.
struct Cursor {
    next: u64,
    end: u64,
    block: Vec<f64>,
    at: usize,
}

/// The head of one source in the merge heap: smallest value first, then the earliest source.
struct Head {
    value: f64,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        let by_value = other
            .value
            .partial_cmp(&self.value)
            .expect("NaNs are never kept");
        by_value.then(other.source.cmp(&self.source))
    }
}

/// A stable k-way merge of sorted runs in a file, then a sorted in-memory tail (the newest values).
struct Merge<'a> {
    file: &'a SpillFile,
    cursors: Vec<Cursor>,
    tail: &'a [f64],
    tail_at: usize,
    heap: BinaryHeap<Head>,
}

impl<'a> Merge<'a> {
    fn new(file: &'a SpillFile, runs: &[Run], tail: &'a [f64]) -> io::Result<Merge<'a>> {
        let mut m = Merge {
            file,
            cursors: runs
                .iter()
                .map(|r| Cursor {
                    next: r.start,
                    end: r.start + r.len,
                    block: Vec::new(),
                    at: 0,
                })
                .collect(),
            tail,
            tail_at: 0,
            heap: BinaryHeap::with_capacity(runs.len() + 1),
        };
        for source in 0..=m.cursors.len() {
            if let Some(value) = m.take(source)? {
                m.heap.push(Head { value, source });
            }
        }
        Ok(m)
    }

    /// The next value of `source` (the tail is the last source).
    fn take(&mut self, source: usize) -> io::Result<Option<f64>> {
        let Some(c) = self.cursors.get_mut(source) else {
            let v = self.tail.get(self.tail_at).copied();
            self.tail_at += 1;
            return Ok(v);
        };
        if c.at == c.block.len() {
            if c.next == c.end {
                return Ok(None);
            }
            let n = (c.end - c.next).min(READ_VALUES as u64) as usize;
            let mut bytes = vec![0u8; n * 8];
            self.file.read_at(&mut bytes, c.next * 8)?;
            c.block.clear();
            c.block.extend(
                bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))),
            );
            c.next += n as u64;
            c.at = 0;
        }
        let v = c.block[c.at];
        c.at += 1;
        Ok(Some(v))
    }

    fn next_value(&mut self) -> io::Result<Option<f64>> {
        let Some(head) = self.heap.pop() else {
            return Ok(None);
        };
        if let Some(value) = self.take(head.source)? {
            self.heap.push(Head {
                value,
                source: head.source,
            });
        }
        Ok(Some(head.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn in_memory(values: &[f64]) -> [f64; 11] {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        sort_stable(&mut v);
        PERCENTILES.map(|p| nearest_rank(&v, p))
    }

    fn spilled(values: &[f64], cap: usize) -> [f64; 11] {
        let mut s = SortedSpill::new(cap, None);
        for &v in values {
            s.push(v);
        }
        s.percentiles()
    }

    fn same(a: [f64; 11], b: [f64; 11]) -> bool {
        a.iter()
            .zip(&b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn many_runs_need_a_reduction_pass_and_stay_exact() {
        // 1,000 runs of 7 values: two levels of merging.
        let values: Vec<f64> = (0..7000u64)
            .map(|i| ((i * 7919) % 6007) as f64 / 3.0)
            .collect();
        let s = {
            let mut s = SortedSpill::new(7, None);
            values.iter().for_each(|&v| s.push(v));
            s
        };
        assert_eq!(s.runs.len(), 1000);
        assert_eq!(s.disk_bytes(), 7000 * 8);
        assert!(same(s.percentiles(), in_memory(&values)));
    }

    #[test]
    fn negative_zero_keeps_its_arrival_order_across_runs() {
        // Python sorts -0.0 and 0.0 as equal and keeps their order; the minimum is whichever came first.
        for first in [-0.0f64, 0.0] {
            let values = [5.0, first, 3.0, -first, 0.0, 9.0];
            let got = spilled(&values, 2);
            assert_eq!(got[0].to_bits(), first.to_bits());
            assert!(same(got, in_memory(&values)));
        }
    }

    #[test]
    fn empty_and_nan_only_columns_are_nan() {
        assert!(spilled(&[], 2).iter().all(|v| v.is_nan()));
        assert!(spilled(&[f64::NAN; 5], 2).iter().all(|v| v.is_nan()));
    }

    proptest! {
        #[test]
        fn spilled_equals_in_memory(
            values in prop::collection::vec(
                prop_oneof![
                    (0u32..50).prop_map(f64::from),
                    -1e3f64..1e3,
                    Just(f64::NAN),
                    Just(-0.0),
                ],
                0..600,
            ),
            cap in 1usize..40,
        ) {
            prop_assert!(same(spilled(&values, cap), in_memory(&values)));
        }
    }
}
