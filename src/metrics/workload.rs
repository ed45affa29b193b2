//! Workload throughput: cumulative tokens against completion time, and the token rates over three windows
//! (evalscope 1.14.1 `utils/workload_timeline.py`, spec §4.5 / §5.5).
//!
//! Every successful measured request appends one point `t = completed_time − wall_start` (wall_start is the
//! first fed request's `start_time`, locked at the first feed) with the cumulative completion, new-prompt
//! (`prompt − cached`, at least 0) and cached-prompt tokens. Rates are `Δtokens / Δt` from an anchor point to
//! the last point: `Overall` from the origin, `Last 30s` from the latest point with `t ≤ wall − 30`
//! (overall when the run is not longer than 30 s), `Steady (drop 20%)` from the latest point with
//! `t ≤ 0.2·wall` (overall when that anchor is the last point). Feeding is O(1): one 32-byte point per
//! success, held in memory up to [`POINTS_IN_MEMORY`] and then appended to an anonymous temporary file in
//! blocks, so memory stays flat; the table and the workload timeline file are computed and written by
//! reading the points back in one stream.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};

use super::spill::{warn_spill_failed, SpillFile};
use crate::pyjson;
use crate::record::RequestRecord;

/// Points kept in memory before a block is written to disk (256 KiB).
pub const POINTS_IN_MEMORY: usize = 1 << 13;

/// Bytes of one point on disk.
const POINT_BYTES: usize = 32;

/// The tail window of the `Last 30s` column, seconds.
pub const LAST_WINDOW_S: f64 = 30.0;
/// The share of the wall time dropped by the `Steady (drop 20%)` column.
pub const WARMUP_FRAC: f64 = 0.2;
/// Row labels, in evalscope's order.
pub const WORKLOAD_METRICS: [&str; 4] = [
    "Total Prompt tok/s",
    "New Prompt tok/s",
    "Cached Prompt tok/s",
    "Completion tok/s",
];

#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    t: f64,
    cum_completion: u64,
    cum_new_prompt: u64,
    cum_cached_prompt: u64,
}

const ORIGIN: Point = Point {
    t: 0.0,
    cum_completion: 0,
    cum_new_prompt: 0,
    cum_cached_prompt: 0,
};

/// Append-only timeline of cumulative tokens, keyed off completion time. One owner (the aggregator).
#[derive(Debug)]
pub struct WorkloadTimeline {
    wall_start: Option<f64>,
    /// The newest points (all of them until the first block is spilled).
    points: Vec<Point>,
    /// Older points, in feed order.
    spilled: SpillFile,
    n_spilled: u64,
    cap: usize,
    in_memory_only: bool,
    first: Option<Point>,
    last: Option<Point>,
}

impl Default for WorkloadTimeline {
    fn default() -> Self {
        Self::with_spill(None, POINTS_IN_MEMORY)
    }
}

impl Point {
    fn to_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.t.to_le_bytes());
        out.extend_from_slice(&self.cum_completion.to_le_bytes());
        out.extend_from_slice(&self.cum_new_prompt.to_le_bytes());
        out.extend_from_slice(&self.cum_cached_prompt.to_le_bytes());
    }

    fn from_bytes(b: &[u8]) -> Point {
        let word = |i: usize| <[u8; 8]>::try_from(&b[i * 8..i * 8 + 8]).expect("8 bytes");
        Point {
            t: f64::from_le_bytes(word(0)),
            cum_completion: u64::from_le_bytes(word(1)),
            cum_new_prompt: u64::from_le_bytes(word(2)),
            cum_cached_prompt: u64::from_le_bytes(word(3)),
        }
    }
}

/// One row of the workload table: a rate over the three windows, tokens per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadRow {
    /// One of [`WORKLOAD_METRICS`].
    pub metric: &'static str,
    /// Over the whole run.
    pub overall: f64,
    /// Over the last [`LAST_WINDOW_S`] seconds.
    pub last_window: f64,
    /// After dropping the first [`WARMUP_FRAC`] of the wall time.
    pub steady_state: f64,
}

/// The workload throughput file (evalscope's `WorkloadThroughput`).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadThroughput {
    /// Points in the timeline (successful requests).
    pub n_samples: u64,
    /// Last point's `t`, `round(·, 4)`.
    pub wall_time_s: f64,
    /// [`LAST_WINDOW_S`].
    pub last_window_s: f64,
    /// [`WARMUP_FRAC`].
    pub warmup_frac: f64,
    /// The four rows, in [`WORKLOAD_METRICS`] order.
    pub rows: Vec<WorkloadRow>,
}

impl WorkloadTimeline {
    /// An empty timeline whose older points go to an anonymous file in `dir` (the run folder).
    pub fn spilling_in(dir: &Path) -> Self {
        Self::with_spill(Some(dir), POINTS_IN_MEMORY)
    }

    /// An empty timeline holding at most `cap` points in memory.
    pub(crate) fn with_spill(dir: Option<&Path>, cap: usize) -> Self {
        WorkloadTimeline {
            wall_start: None,
            points: Vec::new(),
            spilled: SpillFile::new(dir.map(|d| Arc::new(d.to_path_buf()))),
            n_spilled: 0,
            cap: cap.max(1),
            in_memory_only: false,
            first: None,
            last: None,
        }
    }

    /// Feeds one finished record; warmup and failed records are skipped, as evalscope skips them.
    pub fn feed_record(&mut self, r: &RequestRecord) {
        if r.is_warmup || !r.success {
            return;
        }
        self.feed(
            r.start_time(),
            r.completed_time(),
            r.prompt_tokens(),
            r.completion_tokens(),
            r.usage.cached_tokens.unwrap_or(0),
        );
    }

    /// Feeds one successful measured request given as stored numbers (seconds, tokens).
    pub fn feed(
        &mut self,
        start_time: f64,
        completed_time: f64,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_tokens: u64,
    ) {
        if completed_time <= 0.0 || completed_time < start_time {
            return;
        }
        let wall_start = *self.wall_start.get_or_insert(start_time);
        let last = self.last.unwrap_or(ORIGIN);
        let point = Point {
            t: completed_time - wall_start,
            cum_completion: last.cum_completion + completion_tokens,
            cum_new_prompt: last.cum_new_prompt + prompt_tokens.saturating_sub(cached_tokens),
            cum_cached_prompt: last.cum_cached_prompt + cached_tokens,
        };
        self.first.get_or_insert(point);
        self.last = Some(point);
        self.points.push(point);
        if self.points.len() >= self.cap && !self.in_memory_only {
            self.spill();
        }
    }

    fn spill(&mut self) {
        let mut bytes = Vec::with_capacity(self.points.len() * POINT_BYTES);
        for p in &self.points {
            p.to_bytes(&mut bytes);
        }
        match self.spilled.append(&bytes) {
            Ok(_) => {
                self.n_spilled += self.points.len() as u64;
                self.points.clear();
            }
            Err(e) => {
                warn_spill_failed("workload timeline points", &e);
                self.in_memory_only = true;
            }
        }
    }

    /// Every point in feed order (spilled blocks read back as they are reached).
    fn each_point(&self) -> PointIter<'_> {
        PointIter {
            timeline: self,
            next_spilled: 0,
            block: Vec::new(),
            at: 0,
            memory_at: 0,
        }
    }

    /// Points fed so far.
    pub fn n_points(&self) -> usize {
        self.n_spilled as usize + self.points.len()
    }

    /// Bytes of points written to disk so far.
    pub fn spilled_bytes(&self) -> u64 {
        self.spilled.len_bytes()
    }

    /// First start → last completion, seconds (0 without points).
    pub fn wall_time(&self) -> f64 {
        self.last.map_or(0.0, |p| p.t.max(0.0))
    }

    fn rates_from(&self, anchor: Point) -> [f64; 4] {
        let Some(last) = self.last else {
            return [0.0; 4];
        };
        let dt = last.t - anchor.t;
        if dt <= 0.0 {
            return [0.0; 4];
        }
        let d_new = (last.cum_new_prompt - anchor.cum_new_prompt) as f64;
        let d_cached = (last.cum_cached_prompt - anchor.cum_cached_prompt) as f64;
        let d_completion = (last.cum_completion - anchor.cum_completion) as f64;
        [
            (d_new + d_cached) / dt,
            d_new / dt,
            d_cached / dt,
            d_completion / dt,
        ]
    }

    /// The latest point with `t ≤ target`, or the first point. `None` without points (or when the
    /// spilled points cannot be read back).
    fn find_anchor(&self, target: f64) -> Option<(usize, Point)> {
        let first = self.first?;
        if target <= first.t {
            return Some((0, first));
        }
        // Points are in feed order; like evalscope, stop at the first point past the target.
        let mut chosen = (0, first);
        for (i, p) in self.each_point().enumerate() {
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!("reading the workload timeline back failed: {e}");
                    return None;
                }
            };
            if p.t <= target {
                chosen = (i, p);
            } else {
                break;
            }
        }
        Some(chosen)
    }

    fn overall_rates(&self) -> [f64; 4] {
        self.rates_from(ORIGIN)
    }

    fn last_window_rates(&self, window_s: f64) -> [f64; 4] {
        if self.last.is_none() || window_s <= 0.0 {
            return [0.0; 4];
        }
        let wall = self.wall_time();
        if wall <= window_s {
            return self.overall_rates();
        }
        match self.find_anchor(wall - window_s) {
            Some((_, anchor)) => self.rates_from(anchor),
            None => [0.0; 4],
        }
    }

    fn steady_state_rates(&self, warmup_frac: f64) -> [f64; 4] {
        if self.last.is_none() {
            return [0.0; 4];
        }
        let wall = self.wall_time();
        if wall <= 0.0 || warmup_frac <= 0.0 {
            return self.overall_rates();
        }
        match self.find_anchor(wall * warmup_frac) {
            Some((i, _)) if i + 1 == self.n_points() => self.overall_rates(),
            Some((_, anchor)) => self.rates_from(anchor),
            None => [0.0; 4],
        }
    }

    /// The throughput table; `None` without points (evalscope then writes neither workload file).
    pub fn throughput(&self) -> Option<WorkloadThroughput> {
        self.last?;
        let overall = self.overall_rates();
        let last = self.last_window_rates(LAST_WINDOW_S);
        let steady = self.steady_state_rates(WARMUP_FRAC);
        let rows = WORKLOAD_METRICS
            .iter()
            .enumerate()
            .map(|(i, metric)| WorkloadRow {
                metric,
                overall: overall[i],
                last_window: last[i],
                steady_state: steady[i],
            })
            .collect();
        Some(WorkloadThroughput {
            n_samples: self.n_points() as u64,
            wall_time_s: pyjson::round(self.wall_time(), 4),
            last_window_s: LAST_WINDOW_S,
            warmup_frac: WARMUP_FRAC,
            rows,
        })
    }

    /// The exact text of the workload timeline file (`t` rounded to 6 decimals).
    pub fn to_json_string(&self) -> String {
        let mut out = Vec::new();
        self.write_json(&mut out)
            .expect("writing to memory cannot fail unless the spilled points cannot be read");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Writes the workload timeline file to `w` as the points are read (no JSON object per point, and no
    /// copy of the text in memory: a 10-million-request timeline costs only its buffer).
    pub fn write_json<W: Write>(&self, w: W) -> io::Result<()> {
        let mut ser = serde_json::Serializer::with_formatter(w, pyjson::PyFormatter::indent4());
        TimelineJson {
            wall_start: self.wall_start,
            points: PointsJson(self),
        }
        .serialize(&mut ser)
        .map_err(io::Error::other)
    }

    /// Writes the workload timeline file to `path`.
    pub fn write_json_file(&self, path: &Path) -> anyhow::Result<()> {
        use anyhow::Context;
        let file =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        let mut w = io::BufWriter::with_capacity(1 << 16, file);
        self.write_json(&mut w)
            .and_then(|()| w.flush())
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// Every point in feed order: the spilled blocks, then the points in memory.
struct PointIter<'a> {
    timeline: &'a WorkloadTimeline,
    next_spilled: u64,
    block: Vec<Point>,
    at: usize,
    memory_at: usize,
}

impl Iterator for PointIter<'_> {
    type Item = io::Result<Point>;

    fn next(&mut self) -> Option<io::Result<Point>> {
        if self.at < self.block.len() {
            self.at += 1;
            return Some(Ok(self.block[self.at - 1]));
        }
        let t = self.timeline;
        if self.next_spilled < t.n_spilled {
            let n = (t.n_spilled - self.next_spilled).min(4096);
            let mut bytes = vec![0u8; n as usize * POINT_BYTES];
            if let Err(e) = t
                .spilled
                .read_at(&mut bytes, self.next_spilled * POINT_BYTES as u64)
            {
                self.next_spilled = t.n_spilled;
                return Some(Err(e));
            }
            self.block.clear();
            self.block
                .extend(bytes.chunks_exact(POINT_BYTES).map(Point::from_bytes));
            self.next_spilled += n;
            self.at = 1;
            return Some(Ok(self.block[0]));
        }
        let p = t.points.get(self.memory_at).copied()?;
        self.memory_at += 1;
        Some(Ok(p))
    }
}

/// The workload timeline file, keys in evalscope's order.
#[derive(Serialize)]
struct TimelineJson<'a> {
    wall_start: Option<f64>,
    points: PointsJson<'a>,
}

/// The points array, each point written as `{"t", "cum_completion", "cum_new_prompt", "cum_cached_prompt"}`.
struct PointsJson<'a>(&'a WorkloadTimeline);

/// One point as written.
#[derive(Serialize)]
struct PointJson {
    t: f64,
    cum_completion: u64,
    cum_new_prompt: u64,
    cum_cached_prompt: u64,
}

impl Serialize for PointsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.n_points()))?;
        for p in self.0.each_point() {
            let p = p.map_err(S::Error::custom)?;
            seq.serialize_element(&PointJson {
                t: pyjson::round(p.t, 6),
                cum_completion: p.cum_completion,
                cum_new_prompt: p.cum_new_prompt,
                cum_cached_prompt: p.cum_cached_prompt,
            })?;
        }
        seq.end()
    }
}

impl WorkloadThroughput {
    /// The exact text of the workload throughput file (rates unrounded, as evalscope writes them).
    pub fn to_json_string(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("metric".into(), json!(r.metric));
                m.insert("overall".into(), json!(r.overall));
                m.insert("last_window".into(), json!(r.last_window));
                m.insert("steady_state".into(), json!(r.steady_state));
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("n_samples".into(), json!(self.n_samples));
        m.insert("wall_time_s".into(), json!(self.wall_time_s));
        m.insert("last_window_s".into(), json!(self.last_window_s));
        m.insert("warmup_frac".into(), json!(self.warmup_frac));
        m.insert("rows".into(), Value::Array(rows));
        pyjson::dumps_indent4(&m)
    }

    /// `Last 30s`: the tail-window column header.
    pub fn last_label(&self) -> String {
        format!("Last {}s", self.last_window_s as i64)
    }

    /// `Steady (drop 20%)`: the steady-state column header.
    pub fn steady_label(&self) -> String {
        format!("Steady (drop {}%)", (self.warmup_frac * 100.0) as i64)
    }
}

#[cfg(test)]
mod tests {
    //! evalscope's `test_workload_timeline.py`, case by case (the window rules on other timelines are in
    //! `golden_tests/workload.rs`).
    use super::*;

    fn rates_eq(a: [f64; 4], b: [f64; 4]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    fn cumulative_counts_wall_time_and_overall_rates() {
        let mut t = WorkloadTimeline::default();
        t.feed(100.0, 101.0, 20, 10, 0);
        t.feed(100.5, 102.0, 30, 15, 20);
        t.feed(101.0, 104.0, 40, 20, 35);
        assert_eq!(t.n_points(), 3);
        assert_eq!(t.wall_time(), 4.0);
        // Completion 45, new prompt 20 + 10 + 5 = 35, cached 55; over 4 s.
        assert!(rates_eq(t.overall_rates(), [22.5, 8.75, 13.75, 11.25]));
    }

    #[test]
    fn warmup_failed_and_unstamped_requests_are_skipped_and_the_start_is_locked() {
        use std::sync::Arc;
        use std::time::Instant;
        let mut t = WorkloadTimeline::default();
        let warmup = RequestRecord::new(0, true, Arc::from("{}"), Instant::now());
        let failed = RequestRecord::new(1, false, Arc::from("{}"), Instant::now());
        t.feed_record(&warmup);
        t.feed_record(&failed);
        t.feed(0.0, 0.0, 10, 5, 0);
        assert_eq!((t.n_points(), t.wall_time()), (0, 0.0));
        // A later request that started earlier does not move the start: offsets already taken stay right.
        t.feed(100.0, 101.0, 10, 5, 0);
        t.feed(99.0, 102.0, 10, 5, 0);
        assert_eq!(t.wall_start, Some(100.0));
        let offsets: Vec<f64> = t.each_point().map(|p| p.unwrap().t).collect();
        assert_eq!(offsets, [1.0, 2.0]);
        // Cached beyond the prompt: the new-prompt rate is not negative.
        let mut t = WorkloadTimeline::default();
        t.feed(1.0, 2.0, 10, 5, 50);
        assert!(t.overall_rates()[1] >= 0.0);
    }

    #[test]
    fn the_last_window_and_the_steady_state_anchor_inside_the_run() {
        let mut t = WorkloadTimeline::default();
        for (start, done) in [(0.0, 1.0), (0.5, 3.0), (1.0, 6.0), (1.5, 10.0)] {
            t.feed(start, done, 10, 10, 0);
        }
        // Last 5 s of 10: anchor = latest point with t <= 5 (t = 3): 20 tokens over 7 s.
        assert!((t.last_window_rates(5.0)[3] - 20.0 / 7.0).abs() < 1e-9);
        // A window longer than the run falls back to the overall rates.
        assert!(rates_eq(t.last_window_rates(30.0), t.overall_rates()));
        let mut t = WorkloadTimeline::default();
        for (start, done) in [(0.0, 1.0), (0.5, 2.0), (1.0, 8.0), (1.5, 10.0)] {
            t.feed(start, done, 10, 10, 0);
        }
        // Drop 20 % of 10 s: anchor = the point at t = 2: 20 tokens over 8 s.
        assert!((t.steady_state_rates(0.2)[3] - 20.0 / 8.0).abs() < 1e-9);
        // One point cannot carve a steady window: the overall rates.
        let mut t = WorkloadTimeline::default();
        t.feed(0.0, 1.0, 10, 10, 0);
        assert!(rates_eq(t.steady_state_rates(0.2), t.overall_rates()));
    }

    #[test]
    fn four_rows_in_order_labels_from_the_window_and_timeline_points() {
        let mut t = WorkloadTimeline::default();
        t.feed(0.0, 1.0, 10, 10, 0);
        t.feed(0.5, 2.0, 20, 20, 10);
        let mut w = t.throughput().unwrap();
        assert_eq!(w.n_samples, 2);
        let names: Vec<&str> = w.rows.iter().map(|r| r.metric).collect();
        assert_eq!(
            names,
            [
                "Total Prompt tok/s",
                "New Prompt tok/s",
                "Cached Prompt tok/s",
                "Completion tok/s"
            ]
        );
        (w.last_window_s, w.warmup_frac) = (60.0, 0.25);
        assert_eq!(
            (w.last_label(), w.steady_label()),
            ("Last 60s".to_string(), "Steady (drop 25%)".to_string())
        );
        let mut t = WorkloadTimeline::default();
        t.feed(0.0, 1.5, 20, 10, 5);
        let v: Value = serde_json::from_str(&t.to_json_string()).unwrap();
        let p = &v["points"][0];
        assert_eq!(
            (p["t"].as_f64(), p["cum_completion"].as_u64()),
            (Some(1.5), Some(10))
        );
        assert_eq!(
            (
                p["cum_new_prompt"].as_u64(),
                p["cum_cached_prompt"].as_u64()
            ),
            (Some(15), Some(5))
        );
        assert!(
            WorkloadTimeline::default().throughput().is_none(),
            "no points, no table"
        );
    }
}
