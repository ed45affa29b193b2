//! Per-trace (per-conversation) metrics of a `--multi-turn` run: `trace_summary.json` and the `Per-trace
//! summary` table, exactly as evalscope's `utils/trace_metrics.py`.
//!
//! Successful measured turns are grouped by conversation (in the order conversations first finished a
//! turn). Per trace: `Latency (s)` = last turn's completion − first turn's start; `First-Turn TTFT (s)`;
//! `TTFAT (s)` = last turn's start + its TTFT − first turn's start; `Decode TPS` = mean over turns with
//! more than one output token and latency > TTFT of `(completion − 1) / (latency − TTFT)`; `Cache Hit Rate
//! (%)` = Σcached / Σprompt; `Eligible Cache Hit Rate (%)` = Σcached / Σ(previous turn's prompt +
//! completion) over the turns after the first. Each metric is then summarised over the traces with
//! numpy's mean (pairwise summation), min, linear-interpolated percentiles 50/90/95/99, and max.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::record::RequestRecord;
use crate::text::format::unit_for_key;
use crate::text::table::{Align, SimpleOutline};

/// One successful turn, reduced to what the trace metrics use (seconds, tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TraceTurn {
    /// `start_time`.
    pub start_time: f64,
    /// `completed_time`.
    pub completed_time: f64,
    /// TTFT.
    pub ttft: f64,
    /// Latency.
    pub latency: f64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cached tokens (evalscope's per-turn value; 0 when unknown).
    pub cached_tokens: u64,
}

/// One trace's turns, each with its eligible (previous turn's prompt + completion) tokens.
type Turns = [(TraceTurn, u64)];

/// Groups turns by conversation.
#[derive(Debug, Clone, Default)]
pub struct TraceAccumulator {
    order: Vec<u64>,
    traces: HashMap<u64, Vec<(TraceTurn, u64)>>,
}

/// numpy's pairwise summation (`np.add.reduce` on a contiguous float64 array).
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |acc, x| acc + x);
    }
    if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &a[i..] {
            res += x;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
}

/// `np.percentile(values, p)` (linear method) of ascending `sorted`.
fn np_percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let virtual_index = (n as f64 - 1.0) * (p / 100.0);
    if virtual_index >= (n - 1) as f64 {
        return sorted[n - 1];
    }
    let lo = virtual_index.floor();
    let gamma = virtual_index - lo;
    let (a, b) = (sorted[lo as usize], sorted[lo as usize + 1]);
    let diff = b - a;
    if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    }
}

/// One row of `trace_summary.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// Metric name.
    pub metric: &'static str,
    /// Mean, min, p50, p90, p95, p99, max.
    pub stats: [f64; 7],
}

impl TraceRow {
    fn from_values(metric: &'static str, values: &[f64]) -> TraceRow {
        if values.is_empty() {
            return TraceRow {
                metric,
                stats: [0.0; 7],
            };
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        TraceRow {
            metric,
            stats: [
                pairwise_sum(values) / values.len() as f64,
                sorted[0],
                np_percentile(&sorted, 50.0),
                np_percentile(&sorted, 90.0),
                np_percentile(&sorted, 95.0),
                np_percentile(&sorted, 99.0),
                sorted[sorted.len() - 1],
            ],
        }
    }
}

/// The per-trace summary of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSummary {
    /// Conversations with at least one successful measured turn.
    pub n_traces: usize,
    /// One row per metric.
    pub rows: Vec<TraceRow>,
}

const STAT_NAMES: [&str; 7] = ["mean", "min", "p50", "p90", "p95", "p99", "max"];

impl TraceSummary {
    /// No trace (a single-turn run, or nothing succeeded).
    pub fn is_empty(&self) -> bool {
        self.n_traces == 0 || self.rows.is_empty()
    }

    /// The exact text of `trace_summary.json` (`json.dump(indent=4)`).
    pub fn to_json_string(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("metric".into(), json!(r.metric));
                for (name, v) in STAT_NAMES.iter().zip(r.stats) {
                    m.insert((*name).into(), json!(v));
                }
                Value::Object(m)
            })
            .collect();
        crate::pyjson::dumps_indent4(&json!({"n_traces": self.n_traces, "rows": rows}))
    }

    /// The `simple_outline` table evalscope logs after `Per-trace summary (N traces):`.
    pub fn to_table(&self) -> String {
        let mut headers = vec!["Metric".to_string()];
        headers.extend(STAT_NAMES.iter().map(|s| s.to_string()));
        let mut aligns = vec![Align::Left];
        aligns.extend([Align::Right; 7]);
        let mut table = SimpleOutline::new(headers, aligns);
        for r in &self.rows {
            let unit = unit_for_key(r.metric);
            let mut row = vec![r.metric.to_string()];
            row.extend(r.stats.iter().map(|v| unit.fmt(*v)));
            table.push(row);
        }
        table.render()
    }
}

impl TraceAccumulator {
    /// Feeds one finished record (warmup, failed and single-turn records are skipped).
    pub fn feed(&mut self, r: &RequestRecord) {
        let Some(tag) = r.turn else {
            return;
        };
        if r.is_warmup || !r.success {
            return;
        }
        self.feed_turn(
            tag.conversation,
            TraceTurn {
                start_time: r.start_time(),
                completed_time: r.completed_time(),
                ttft: r.ttft_s(),
                latency: r.latency_s(),
                prompt_tokens: r.prompt_tokens(),
                completion_tokens: r.completion_tokens(),
                cached_tokens: tag.cached_tokens.unwrap_or(0),
            },
        );
    }

    /// Feeds one successful turn of trace `key`.
    pub fn feed_turn(&mut self, key: u64, turn: TraceTurn) {
        let turns = self.traces.entry(key).or_insert_with(|| {
            self.order.push(key);
            Vec::new()
        });
        let eligible = turns
            .last()
            .map_or(0, |(prev, _)| prev.prompt_tokens + prev.completion_tokens);
        turns.push((turn, eligible));
    }

    /// The summary over every trace fed.
    pub fn summary(&self) -> TraceSummary {
        if self.order.is_empty() {
            return TraceSummary::default();
        }
        let traces: Vec<&Vec<(TraceTurn, u64)>> =
            self.order.iter().map(|k| &self.traces[k]).collect();
        let metric =
            |f: &dyn Fn(&Turns) -> f64| -> Vec<f64> { traces.iter().map(|t| f(t)).collect() };
        let latency = |t: &Turns| (t[t.len() - 1].0.completed_time - t[0].0.start_time).max(0.0);
        let first_ttft = |t: &Turns| t[0].0.ttft;
        let ttfat = |t: &Turns| {
            let last = &t[t.len() - 1].0;
            ((last.start_time + last.ttft) - t[0].0.start_time).max(0.0)
        };
        let decode_tps = |t: &Turns| {
            let samples: Vec<f64> = t
                .iter()
                .filter(|(x, _)| x.completion_tokens > 1 && x.latency > x.ttft)
                .map(|(x, _)| (x.completion_tokens - 1) as f64 / (x.latency - x.ttft))
                .collect();
            if samples.is_empty() {
                0.0
            } else {
                samples.iter().fold(0.0, |a, b| a + b) / samples.len() as f64
            }
        };
        let cache_hit = |t: &Turns| {
            let prompt: u64 = t.iter().map(|(x, _)| x.prompt_tokens).sum();
            if prompt == 0 {
                return 0.0;
            }
            let cached: u64 = t.iter().map(|(x, _)| x.cached_tokens).sum();
            cached as f64 / prompt as f64 * 100.0
        };
        let eligible_hit = |t: &Turns| {
            let eligible: Vec<&(TraceTurn, u64)> = t.iter().filter(|(_, e)| *e > 0).collect();
            let total: u64 = eligible.iter().map(|(_, e)| e).sum();
            if total == 0 {
                return 0.0;
            }
            let cached: u64 = eligible.iter().map(|(x, _)| x.cached_tokens).sum();
            cached as f64 / total as f64 * 100.0
        };
        let rows = vec![
            TraceRow::from_values("Latency (s)", &metric(&latency)),
            TraceRow::from_values("First-Turn TTFT (s)", &metric(&first_ttft)),
            TraceRow::from_values("TTFAT (s)", &metric(&ttfat)),
            TraceRow::from_values("Decode TPS", &metric(&decode_tps)),
            TraceRow::from_values("Cache Hit Rate (%)", &metric(&cache_hit)),
            TraceRow::from_values("Eligible Cache Hit Rate (%)", &metric(&eligible_hit)),
        ];
        TraceSummary {
            n_traces: traces.len(),
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_numpy_linear() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(np_percentile(&s, 50.0), 2.5);
        assert_eq!(np_percentile(&s, 90.0), 3.7);
        assert_eq!(np_percentile(&s, 99.0), 3.9699999999999998);
        assert_eq!(np_percentile(&[5.0], 99.0), 5.0);
        let v: Vec<f64> = (0..20).map(|i| 0.1 * i as f64).collect();
        assert_eq!(pairwise_sum(&v), 19.0);
    }

    #[test]
    fn two_traces_give_evalscope_rows() {
        let mut acc = TraceAccumulator::default();
        let turn = |start: f64, end: f64, prompt: u64, cached: u64| TraceTurn {
            start_time: start,
            completed_time: end,
            ttft: 0.5,
            latency: end - start,
            prompt_tokens: prompt,
            completion_tokens: 11,
            cached_tokens: cached,
        };
        acc.feed_turn(7, turn(0.0, 1.5, 100, 0));
        acc.feed_turn(3, turn(1.0, 2.0, 50, 0));
        acc.feed_turn(7, turn(2.0, 3.0, 200, 111));
        let s = acc.summary();
        assert_eq!(s.n_traces, 2);
        // Trace 7: latency 3.0, TTFAT 2.5, cache 111/300, eligible 111/111; trace 3: 1.0, 0.5, 0, 0.
        assert_eq!(s.rows[0].stats[0], 2.0);
        assert_eq!(s.rows[2].stats[6], 2.5);
        assert_eq!(s.rows[4].stats[6], 37.0);
        assert_eq!(s.rows[5].stats[6], 100.0);
        assert_eq!(s.rows[5].stats[1], 0.0);
        let json = s.to_json_string();
        assert!(json.starts_with("{\n    \"n_traces\": 2,\n    \"rows\": [\n        {\n            \"metric\": \"Latency (s)\",\n            \"mean\": 2.0,"), "{json}");
        let table = s.to_table();
        assert!(
            table.contains(
                "│ Latency (s)                 │      2 │     1 │     2 │   2.8 │   2.9 │  2.98 │     3 │"
            ),
            "{table}"
        );
    }

    fn turn(
        start: f64,
        end: f64,
        ttft: f64,
        prompt: u64,
        completion: u64,
        cached: u64,
    ) -> TraceTurn {
        TraceTurn {
            start_time: start,
            completed_time: end,
            ttft,
            latency: end - start,
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
        }
    }

    /// The stats column of `metric` (mean, min, p50, p90, p95, p99, max).
    fn stats(s: &TraceSummary, metric: &str) -> [f64; 7] {
        s.rows.iter().find(|r| r.metric == metric).unwrap().stats
    }

    /// evalscope's `test_trace_metrics.py`: one three-turn trace, its derived metrics by hand.
    #[test]
    fn a_three_turn_trace_gives_evalscopes_derivations() {
        let mut acc = TraceAccumulator::default();
        acc.feed_turn(1, turn(0.0, 2.0, 0.5, 100, 51, 0));
        acc.feed_turn(1, turn(3.0, 4.5, 0.3, 200, 21, 130));
        acc.feed_turn(1, turn(5.0, 7.0, 0.4, 400, 31, 200));
        let s = acc.summary();
        assert_eq!(s.n_traces, 1);
        let one = |metric: &str| stats(&s, metric)[0];
        assert!((one("Latency (s)") - 7.0).abs() < 1e-12);
        assert_eq!(one("First-Turn TTFT (s)"), 0.5);
        assert!((one("TTFAT (s)") - 5.4).abs() < 1e-12);
        let decode = (50.0 / 1.5 + 20.0 / 1.2 + 30.0 / 1.6) / 3.0;
        assert!((one("Decode TPS") - decode).abs() < 1e-9);
        assert!((one("Cache Hit Rate (%)") - 330.0 / 700.0 * 100.0).abs() < 1e-9);
        // Eligible: turn 1 none, turn 2 100 + 51, turn 3 200 + 21.
        assert!((one("Eligible Cache Hit Rate (%)") - 330.0 / 372.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn warmup_failed_and_single_turn_records_are_not_traces_and_rows_aggregate_traces() {
        use std::sync::Arc;
        use std::time::Instant;
        let mut acc = TraceAccumulator::default();
        let tag = crate::record::TurnTag {
            conversation: 0,
            turn_index: 0,
            is_last: true,
            cached_tokens: None,
        };
        let mut warmup = RequestRecord::new(0, true, Arc::from("{}"), Instant::now());
        warmup.success = true;
        warmup.turn = Some(tag);
        let mut failed = RequestRecord::new(1, false, Arc::from("{}"), Instant::now());
        failed.turn = Some(tag);
        let mut single = RequestRecord::new(2, false, Arc::from("{}"), Instant::now());
        single.success = true;
        for r in [&warmup, &failed, &single] {
            acc.feed(r);
        }
        assert!(acc.summary().is_empty());
        // Two one-turn traces: latencies 1 and 3.
        acc.feed_turn(1, turn(0.0, 1.0, 0.1, 50, 11, 0));
        acc.feed_turn(2, turn(0.0, 3.0, 0.5, 50, 31, 0));
        let s = acc.summary();
        assert_eq!(s.n_traces, 2);
        let names: Vec<&str> = s.rows.iter().map(|r| r.metric).collect();
        assert_eq!(
            names,
            [
                "Latency (s)",
                "First-Turn TTFT (s)",
                "TTFAT (s)",
                "Decode TPS",
                "Cache Hit Rate (%)",
                "Eligible Cache Hit Rate (%)"
            ]
        );
        let latency = stats(&s, "Latency (s)");
        assert_eq!((latency[0], latency[1], latency[6]), (2.0, 1.0, 3.0));
        let table = s.to_table();
        for col in [
            "Metric",
            "mean",
            "min",
            "p50",
            "p90",
            "p95",
            "p99",
            "max",
            "Latency (s)",
        ] {
            assert!(table.contains(col), "{col}: {table}");
        }
        // `trace_summary.json`: n_traces and six rows of the metric and seven statistics.
        let json: Value = serde_json::from_str(&s.to_json_string()).unwrap();
        assert_eq!(json["n_traces"], 2);
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 6);
        for row in rows {
            let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                ["metric", "mean", "min", "p50", "p90", "p95", "p99", "max"]
            );
        }
    }
}
