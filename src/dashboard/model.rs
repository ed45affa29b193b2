//! What the dashboard shows, computed on its own thread from the live board at each refresh: the
//! current run's progress and aim, the achieved rate, percentiles over the recent window, the series
//! behind the charts (kept here, one point a second), errors, the client's own delays and CPU, the
//! server's gauges, the sweep so far, and the latest log lines.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::live::{quantile, Board, Point, Ring, Target};
use crate::record::FailureKind;

/// Seconds of history the charts keep.
const HISTORY_S: usize = 600;

/// The window of the "now" rate.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// One row of the latency table: p50, p90, p99 in milliseconds (`None` before any value).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRow {
    /// `TTFT`, `TPOT`, `ITL`, `E2E`.
    pub label: &'static str,
    /// p50, p90, p99 (ms).
    pub ms: [Option<f64>; 3],
    /// Values in the window.
    pub n: usize,
}

/// The current run as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// Folder name.
    pub name: String,
    /// 1-based place in the sweep.
    pub index: usize,
    /// Measured requests to send.
    pub total: u64,
    /// Measured requests finished, succeeded, failed.
    pub completed: u64,
    /// Of which succeeded.
    pub succeeded: u64,
    /// Of which failed.
    pub failed: u64,
    /// Warmup requests finished.
    pub warmup_done: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// The aim, in words.
    pub target: String,
    /// Finished requests per second over the last few seconds.
    pub rate_now: f64,
    /// Finished requests per second since the first one.
    pub rate_avg: f64,
    /// Output tokens per second since the first finished request.
    pub output_tok_s: f64,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// The latency table.
    pub latency: Vec<LatencyRow>,
    /// Failures by kind (only kinds seen).
    pub errors: Vec<(&'static str, u64)>,
    /// The latest failure's text.
    pub latest_error: Option<String>,
    /// Send lag p99 (ms) over the recent window.
    pub send_lag_p99_ms: Option<f64>,
    /// Read lag p99 (ms) over the recent window.
    pub read_lag_p99_ms: Option<f64>,
    /// The server's gauges.
    pub server: Vec<(&'static str, f64)>,
    /// Whether it has ended.
    pub finished: bool,
}

/// The whole screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    /// Run name (folder), model, shard.
    pub title: String,
    /// `run 2 of 3`, or `run 2` when a search decides the runs.
    pub sweep: String,
    /// The runs already finished: name, succeeded, completed.
    pub done: Vec<(String, u64, u64)>,
    /// The current run.
    pub run: Option<RunView>,
    /// Finished requests per second, one value a second (oldest first).
    pub rate_series: Vec<u64>,
    /// TTFT p50 (ms) over the recent window, one value a second.
    pub ttft_series: Vec<u64>,
    /// llmperf's CPU use, % of one core, since the previous refresh.
    pub cpu_pct: f64,
    /// Latest log lines (oldest first).
    pub log: Vec<String>,
}

/// The samples behind the "now" rate and the charts, for the current run.
pub struct History {
    point: Option<Arc<Point>>,
    samples: VecDeque<(Instant, u64)>,
    next_tick: Instant,
    last_completed: u64,
    rate: VecDeque<u64>,
    ttft: VecDeque<u64>,
    cpu: (Instant, Duration),
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    /// Empty.
    pub fn new() -> Self {
        History {
            point: None,
            samples: VecDeque::new(),
            next_tick: Instant::now(),
            last_completed: 0,
            rate: VecDeque::new(),
            ttft: VecDeque::new(),
            cpu: (Instant::now(), crate::resources::process_cpu()),
        }
    }

    /// Builds the screen from `board` now; `log` is the tail of the log.
    pub fn screen(&mut self, board: &Board, log: Vec<String>) -> Screen {
        let now = Instant::now();
        let points = board.points();
        let latest = points.last().cloned();
        if let Some(p) = &latest {
            if !self.point.as_ref().is_some_and(|q| Arc::ptr_eq(p, q)) {
                self.reset(p.clone(), now);
            }
        }
        let cpu = crate::resources::process_cpu();
        let wall = now.duration_since(self.cpu.0).as_secs_f64();
        let cpu_pct = if wall > 0.0 {
            cpu.saturating_sub(self.cpu.1).as_secs_f64() / wall * 100.0
        } else {
            0.0
        };
        self.cpu = (now, cpu);
        let run = latest.as_ref().map(|p| self.run_view(p, now));
        let done = points
            .iter()
            .filter(|p| p.is_finished() && !latest.as_ref().is_some_and(|l| Arc::ptr_eq(p, l)))
            .map(|p| {
                let s = p.stats();
                (p.desc.name.clone(), s.succeeded, s.completed)
            })
            .collect();
        let index = latest.as_ref().map_or(0, |p| p.desc.index);
        Screen {
            title: title(board),
            sweep: match board.planned {
                Some(n) => format!("run {index} of {n}"),
                None => format!("run {index}"),
            },
            done,
            run,
            rate_series: self.rate.iter().copied().collect(),
            ttft_series: self.ttft.iter().copied().collect(),
            cpu_pct,
            log,
        }
    }

    fn reset(&mut self, point: Arc<Point>, now: Instant) {
        self.point = Some(point);
        self.samples.clear();
        self.rate.clear();
        self.ttft.clear();
        self.last_completed = 0;
        self.next_tick = now + Duration::from_secs(1);
    }

    fn run_view(&mut self, p: &Point, now: Instant) -> RunView {
        let stats = p.stats();
        let recent = p.recent();
        self.samples.push_back((now, stats.completed));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let rate_now = match (self.samples.front(), self.samples.back()) {
            (Some((t0, c0)), Some((t1, c1))) if t1 > t0 => {
                (c1 - c0) as f64 / t1.duration_since(*t0).as_secs_f64()
            }
            _ => 0.0,
        };
        let ttft_p50 = quantile(&mut recent.ttft.values().collect::<Vec<_>>(), 0.5);
        while now >= self.next_tick {
            self.next_tick += Duration::from_secs(1);
            push_capped(&mut self.rate, stats.completed - self.last_completed);
            self.last_completed = stats.completed;
            push_capped(
                &mut self.ttft,
                ttft_p50.map_or(0, |v| (v * 1000.0).round() as u64),
            );
        }
        let since_first = stats
            .first_at
            .map(|t| now.saturating_duration_since(t).as_secs_f64())
            .unwrap_or(0.0);
        let per_s = |n: u64| {
            if since_first > 0.0 {
                n as f64 / since_first
            } else {
                0.0
            }
        };
        let errors = FailureKind::ALL
            .iter()
            .filter(|k| stats.failed[k.index()] > 0)
            .map(|k| (k.label(), stats.failed[k.index()]))
            .collect();
        RunView {
            name: p.desc.name.clone(),
            index: p.desc.index,
            total: p.desc.total,
            completed: stats.completed,
            succeeded: stats.succeeded,
            failed: stats.failed_total(),
            warmup_done: p.warmup_done(),
            in_flight: p.in_flight(),
            target: target_text(p.desc.target),
            rate_now,
            rate_avg: per_s(stats.completed),
            output_tok_s: per_s(stats.output_tokens),
            elapsed_s: now.duration_since(p.started).as_secs_f64(),
            latency: vec![
                row("TTFT", &recent.ttft),
                row("TPOT", &recent.tpot),
                row("ITL", &recent.itl),
                row("E2E", &recent.latency),
            ],
            errors,
            latest_error: stats
                .latest_error
                .map(|(kind, text)| format!("{}: {text}", kind.label())),
            send_lag_p99_ms: ms(&recent.send_lag, 0.99),
            read_lag_p99_ms: ms(&recent.read_lag, 0.99),
            server: p.server(),
            finished: p.is_finished(),
        }
    }
}

fn push_capped(series: &mut VecDeque<u64>, v: u64) {
    if series.len() == HISTORY_S {
        series.pop_front();
    }
    series.push_back(v);
}

fn ms(ring: &Ring, q: f64) -> Option<f64> {
    quantile(&mut ring.values().collect::<Vec<_>>(), q).map(|v| v * 1000.0)
}

fn row(label: &'static str, ring: &Ring) -> LatencyRow {
    let mut values: Vec<f64> = ring.values().collect();
    let n = values.len();
    let ms = [0.5, 0.9, 0.99].map(|q| quantile(&mut values, q).map(|v| v * 1000.0));
    LatencyRow { label, ms, n }
}

fn title(board: &Board) -> String {
    let mut t = format!("llmperf · {} · {}", board.run, board.model);
    if let Some(k) = board.shard {
        t.push_str(&format!(" · shard {k}"));
    }
    t
}

/// The aim in words.
pub fn target_text(target: Target) -> String {
    match target {
        Target::Concurrency {
            parallel,
            rate: None,
        } => format!("closed loop, {parallel} in flight"),
        Target::Concurrency {
            parallel,
            rate: Some(r),
        } => format!("closed loop, {parallel} in flight, paced {r} req/s"),
        Target::Rate(r) => format!("open loop, {r} req/s"),
        Target::Trace => "trace replay (the trace's timestamps)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    #[test]
    fn the_screen_follows_the_latest_run() {
        let board = Board::new("demo".into(), Some(1), Some(2), "m".into());
        let mut h = History::new();
        let s = h.screen(&board, vec![]);
        assert_eq!(s.run, None);
        assert_eq!(s.sweep, "run 0 of 2");
        let sent = Arc::new(AtomicU64::new(0));
        let feed = board.start_point(
            "parallel_4_number_8".into(),
            8,
            Target::Concurrency {
                parallel: 4,
                rate: None,
            },
            sent.clone(),
        );
        sent.fetch_add(3, std::sync::atomic::Ordering::Relaxed);
        let s = h.screen(&board, vec!["a log line".into()]);
        assert_eq!(s.title, "llmperf · demo · m · shard 1");
        assert_eq!(s.sweep, "run 1 of 2");
        let run = s.run.unwrap();
        assert_eq!((run.total, run.in_flight, run.completed), (8, 3, 0));
        assert_eq!(run.target, "closed loop, 4 in flight");
        assert_eq!(run.latency[0].ms, [None, None, None]);
        feed.finish();
        board.start_point("parallel_8_number_8".into(), 8, Target::Rate(2.0), sent);
        let s = h.screen(&board, vec![]);
        assert_eq!(s.done, vec![("parallel_4_number_8".to_string(), 0, 0)]);
        assert_eq!(s.run.unwrap().target, "open loop, 2 req/s");
    }
}
