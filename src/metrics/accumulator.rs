//! Online accumulation of finished records into evalscope's summary and percentile table.
//!
//! Mirrors evalscope 1.14.1's `MetricsAccumulator` (spec §4.1): running sums in arrival order (so float
//! sums come out bit-identical), the `_safe_div` `-1` sentinel, and `create_message`'s key set, from which
//! both the summary file and the periodic log line are built. Per-success values go to exact percentile
//! columns that hold a bounded number in memory and spill sorted runs to disk (spec §4.2; `spill.rs`), so
//! memory stays flat however long the run; no record is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::client::{self, ClientDiagnostics, ClientTiming, CpuUse};
use super::pd::PdMetrics;
use super::percentile::PercentileTable;
use super::samples::{Sample, SuccessRows};
use super::spill::DEFAULT_SPILL_VALUES;
use super::summary::{
    keys, message_json_compact, message_json_indent2, BenchmarkSummary, InputTokenError, Message,
    PyNum, SummaryExtras,
};
use crate::record::RequestRecord;

/// What a run's summary needs beyond its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummaryContext {
    /// `Concurrency` as evalscope writes it (the plan's `Load::parallel_as_written`).
    pub concurrency_as_written: i64,
    /// `Request Rate (req/s)` as evalscope writes it (the plan's `Load::rate_as_written`).
    pub rate_as_written: f64,
    /// Embedding / rerank APIs: input-only summary keys and percentile columns.
    pub input_only: bool,
    /// `--enable-pd-metrics`: the PD handoff keys and columns ([`super::pd`]).
    pub pd_metrics: bool,
}

/// Python's built-in `sum()` over floats (CPython ≥ 3.12: Neumaier-compensated), kept incrementally.
#[derive(Debug, Clone, Copy, Default)]
struct PySum {
    sum: f64,
    compensation: f64,
}

impl PySum {
    fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    fn value(&self) -> f64 {
        if self.compensation != 0.0 && self.compensation.is_finite() {
            self.sum + self.compensation
        } else {
            self.sum
        }
    }
}

/// evalscope's `_safe_div`: the quotient as a float, or the `int` −1 on a zero denominator.
fn safe_div(numerator: f64, denominator: f64) -> PyNum {
    if denominator == 0.0 {
        PyNum::Int(-1)
    } else {
        PyNum::Float(numerator / denominator)
    }
}

/// Running statistics of one run. One owner (the aggregator); `add` is O(1) amortised per value kept
/// (a sorted run is written every [`DEFAULT_SPILL_VALUES`] values of a column).
#[derive(Debug)]
pub struct Accumulator {
    ctx: SummaryContext,
    n_total: u64,
    n_success: u64,
    n_stream_total: u64,
    n_non_stream_total: u64,
    n_stream_success: u64,
    n_stream_tpot: u64,
    wall_start: Option<f64>,
    wall_end: Option<f64>,
    total_latency: f64,
    total_ttft: f64,
    total_ttft_stream: f64,
    total_tpot: f64,
    total_tpot_stream: f64,
    total_prompt_tokens: u64,
    total_completion_tokens: u64,
    itl_sum: PySum,
    n_itl: u64,
    total_cached_tokens: u64,
    total_prompt_tokens_for_cache: u64,
    n_cache: u64,
    total_decoded_per_iter: f64,
    n_decoded: u64,
    turns: TurnSums,
    failures: BTreeMap<&'static str, u64>,
    first_errors: super::first_errors::FirstErrors,
    interrupted: bool,
    rows: SuccessRows,
    client: ClientTiming,
    input_error: ErrorSums,
    pd: PdMetrics,
    goodput: Option<super::goodput::GoodputCounter>,
    /// Warmup requests' (send, end) times: the load verdict counts them in flight.
    warmup_spans: Vec<(f64, f64)>,
    /// Warmup conversations' first send and last end (`--multi-turn`): a conversation holds its slot
    /// through its think time, as the verdict counts measured conversations.
    warmup_conversations: BTreeMap<u64, (f64, f64)>,
}

/// Multi-turn sums: context turns, and TTFT of first vs later turns (evalscope's cold / warm split).
#[derive(Debug, Clone, Copy, Default)]
struct TurnSums {
    total_turns: u64,
    first_ttft: f64,
    n_first: u64,
    later_ttft: f64,
    n_later: u64,
}

impl TurnSums {
    fn add(&mut self, turns: u32, first: bool, ttft: f64) {
        self.total_turns += u64::from(turns);
        if first {
            self.first_ttft += ttft;
            self.n_first += 1;
        } else {
            self.later_ttft += ttft;
            self.n_later += 1;
        }
    }
}

/// Running sums of server − intended prompt tokens.
#[derive(Debug, Clone, Copy, Default)]
struct ErrorSums {
    n: u64,
    intended: u64,
    error: i64,
    max_error: i64,
    exact: u64,
}

impl Accumulator {
    /// An empty accumulator for one run, spilling to the system's temporary folder.
    pub fn new(ctx: SummaryContext) -> Self {
        Self::with_spill(ctx, None, DEFAULT_SPILL_VALUES)
    }

    /// An empty accumulator whose percentile columns spill to anonymous files in `dir` (the run folder:
    /// its disk, never a RAM-backed `/tmp`).
    pub fn spilling_in(ctx: SummaryContext, dir: &Path) -> Self {
        Self::with_spill(ctx, Some(dir), DEFAULT_SPILL_VALUES)
    }

    /// An empty accumulator holding at most `cap` values per percentile column in memory.
    pub(crate) fn with_spill(ctx: SummaryContext, dir: Option<&Path>, cap: usize) -> Self {
        let dir: Option<Arc<PathBuf>> = dir.map(|d| Arc::new(d.to_path_buf()));
        Accumulator {
            ctx,
            n_total: 0,
            n_success: 0,
            n_stream_total: 0,
            n_non_stream_total: 0,
            n_stream_success: 0,
            n_stream_tpot: 0,
            wall_start: None,
            wall_end: None,
            total_latency: 0.0,
            total_ttft: 0.0,
            total_ttft_stream: 0.0,
            total_tpot: 0.0,
            total_tpot_stream: 0.0,
            total_prompt_tokens: 0,
            total_completion_tokens: 0,
            itl_sum: PySum::default(),
            n_itl: 0,
            total_cached_tokens: 0,
            total_prompt_tokens_for_cache: 0,
            n_cache: 0,
            total_decoded_per_iter: 0.0,
            n_decoded: 0,
            turns: TurnSums::default(),
            failures: BTreeMap::new(),
            first_errors: Default::default(),
            interrupted: false,
            rows: SuccessRows::new(ctx.input_only, cap, dir.clone()),
            client: ClientTiming::new(cap, dir.clone()),
            input_error: ErrorSums::default(),
            pd: PdMetrics::new(cap, dir),
            goodput: None,
            warmup_spans: Vec::new(),
            warmup_conversations: BTreeMap::new(),
        }
    }

    /// Warmup requests' `(start_time, completed_time)` (the load verdict counts them in flight; they are
    /// neither stored nor measured); a warmup conversation's requests as one span, its first send to its
    /// last end.
    pub fn warmup_spans(&self) -> Vec<(f64, f64)> {
        let mut spans = self.warmup_spans.clone();
        spans.extend(self.warmup_conversations.values());
        spans
    }

    /// `--goodput`: also count the requests meeting these SLOs.
    pub fn set_goodput(&mut self, slos: Option<super::goodput::GoodputSlos>) {
        self.goodput = slos.map(super::goodput::GoodputCounter::new);
    }

    /// Counts one finished request; warmup records are ignored entirely.
    pub fn add(&mut self, r: &RequestRecord) {
        if r.is_warmup {
            let span = (r.start_time(), r.completed_time());
            match r.turn {
                Some(t) => {
                    let c = self
                        .warmup_conversations
                        .entry(t.conversation)
                        .or_insert(span);
                    c.0 = c.0.min(span.0);
                    c.1 = c.1.max(span.1);
                }
                None => self.warmup_spans.push(span),
            }
            return;
        }
        if let Some(g) = &mut self.goodput {
            g.add(r.success.then(|| super::goodput::RequestTimes {
                ttft_ms: r.ttft_s() * 1000.0,
                tpot_ms: r.tpot_s() * 1000.0,
                max_itl_ms: r.itl_s().fold(0.0, f64::max) * 1000.0,
                e2el_ms: r.latency_s() * 1000.0,
            }));
        }
        self.client.add(r);
        let mut s = Sample {
            start_time: r.start_time(),
            completed_time: r.completed_time(),
            success: r.success,
            is_stream: r.is_stream,
            ..Sample::default()
        };
        if let (true, Some(intended)) = (r.success, r.intended_prompt_tokens) {
            let e = &mut self.input_error;
            let diff = r.prompt_tokens() as i64 - intended as i64;
            e.n += 1;
            e.intended += intended;
            e.error += diff;
            if diff.abs() > e.max_error.abs() {
                e.max_error = diff;
            }
            e.exact += u64::from(diff == 0);
        }
        if r.success {
            s.latency = r.latency_s();
            s.ttft = r.ttft_s();
            s.tpot = r.tpot_s();
            s.prompt_tokens = r.prompt_tokens();
            s.completion_tokens = r.completion_tokens();
            s.cached_tokens = r.usage.cached_tokens;
            s.n_decode_chunks = r.n_decode_chunks;
            if let Some(t) = r.turn {
                s.cached_tokens = t.cached_tokens;
                s.turn = Some((t.turn_index + 1, t.turn_index == 0));
            }
            self.add_sample(&s, r.itl_s());
        } else {
            let kind = r.failure.map_or("unknown", |kind| kind.label());
            s.failure = Some(kind);
            self.note_failure(kind, r.status_code, r.error.as_deref());
            self.add_sample(&s, std::iter::empty());
        }
    }

    /// Counts one measured request given as plain numbers (`itl`: its inter-token latencies, seconds).
    pub(crate) fn add_sample<I: IntoIterator<Item = f64>>(&mut self, s: &Sample, itl: I) {
        self.n_total += 1;
        if s.is_stream {
            self.n_stream_total += 1;
        } else {
            self.n_non_stream_total += 1;
        }
        if s.success {
            self.add_success(s, itl);
        } else {
            *self
                .failures
                .entry(s.failure.unwrap_or("unknown"))
                .or_insert(0) += 1;
        }
        if s.start_time > 0.0 && s.completed_time >= s.start_time {
            self.wall_start = Some(
                self.wall_start
                    .map_or(s.start_time, |w| w.min(s.start_time)),
            );
            self.wall_end = Some(
                self.wall_end
                    .map_or(s.completed_time, |w| w.max(s.completed_time)),
            );
        }
    }

    fn add_success<I: IntoIterator<Item = f64>>(&mut self, s: &Sample, itl: I) {
        self.n_success += 1;
        self.total_latency += s.latency;
        self.total_ttft += s.ttft;
        self.total_prompt_tokens += s.prompt_tokens;
        self.total_completion_tokens += s.completion_tokens;
        self.total_tpot += s.tpot;
        let mut pd_itl = Vec::new();
        for x in itl {
            self.itl_sum.add(x);
            self.n_itl += 1;
            self.rows.push_itl(x);
            if self.ctx.pd_metrics {
                pd_itl.push(x);
            }
        }
        if self.ctx.pd_metrics {
            self.pd.add(&pd_itl);
        }
        if s.is_stream {
            self.n_stream_success += 1;
            self.total_ttft_stream += s.ttft;
            if s.completion_tokens > 1 {
                self.n_stream_tpot += 1;
                self.total_tpot_stream += s.tpot;
            }
        }
        if let Some((turns, first)) = s.turn {
            self.turns.add(turns, first, s.ttft);
        }
        if let Some(cached) = s.cached_tokens {
            if s.prompt_tokens > 0 {
                self.total_cached_tokens += cached;
                self.total_prompt_tokens_for_cache += s.prompt_tokens;
                self.n_cache += 1;
            }
        }
        if s.completion_tokens > 1 && s.n_decode_chunks > 1 {
            let per_iter = (s.completion_tokens - 1) as f64 / f64::from(s.n_decode_chunks - 1);
            if per_iter > 1.0 {
                self.total_decoded_per_iter += per_iter;
                self.n_decoded += 1;
            }
        }
        self.rows.push(s);
    }

    /// Keeps a failure's status and error text if it is the first of its kind (`add` does it for records;
    /// a summary rebuilt from stored rows calls it with each failed row's columns).
    pub(crate) fn note_failure(
        &mut self,
        kind: &'static str,
        status: Option<u16>,
        error: Option<&str>,
    ) {
        self.first_errors.note(kind, status, error);
    }

    /// Marks the run as cut short (adds `"Interrupted": true` to the summary).
    pub fn mark_interrupted(&mut self) {
        self.interrupted = true;
    }

    /// Measured requests (successes and failures).
    pub fn total(&self) -> u64 {
        self.n_total
    }

    /// Successful measured requests.
    pub fn succeeded(&self) -> u64 {
        self.n_success
    }

    /// Failed measured requests.
    pub fn failed(&self) -> u64 {
        self.n_total - self.n_success
    }

    /// Test duration: latest completion − earliest start over measured records, 1.0 before any.
    fn wall_time(&self) -> f64 {
        match (self.wall_start, self.wall_end) {
            (Some(start), Some(end)) => (end - start).max(0.0),
            _ => 1.0,
        }
    }

    /// evalscope's `create_message` dict: the values, rounded, in its key order, without the keys that do
    /// not apply to this run.
    fn message(&self) -> Message {
        let t = self.wall_time();
        let n = self.n_success as f64;
        let (avg_ttft, avg_tpot) = if self.n_stream_success > 0 {
            let tpot = if self.n_stream_tpot > 0 {
                PyNum::Float(self.total_tpot_stream / self.n_stream_tpot as f64)
            } else {
                PyNum::Float(0.0)
            };
            let ttft = safe_div(self.total_ttft_stream, self.n_stream_success as f64);
            (ttft, tpot)
        } else {
            (safe_div(self.total_ttft, n), safe_div(self.total_tpot, n))
        };
        let n_itl = self.n_itl;
        let avg_itl = if n_itl > 0 {
            PyNum::Float(self.itl_sum.value() / n_itl as f64)
        } else {
            PyNum::Float(0.0)
        };
        let prompt = self.total_prompt_tokens as f64;
        let completion = self.total_completion_tokens as f64;
        let both = (self.total_prompt_tokens + self.total_completion_tokens) as f64;

        let mut m: Message = vec![
            (keys::TEST_DURATION, PyNum::Float(t).round(4)),
            (
                keys::CONCURRENCY,
                PyNum::Int(self.ctx.concurrency_as_written),
            ),
            (keys::REQUEST_RATE, PyNum::Float(self.ctx.rate_as_written)),
            (keys::TOTAL_REQUESTS, PyNum::Int(self.n_total as i64)),
            (keys::SUCCESS_REQUESTS, PyNum::Int(self.n_success as i64)),
            (keys::FAILED_REQUESTS, PyNum::Int(self.failed() as i64)),
            (
                keys::STREAM_REQUESTS,
                PyNum::Int(self.n_stream_total as i64),
            ),
            (
                keys::NON_STREAM_REQUESTS,
                PyNum::Int(self.n_non_stream_total as i64),
            ),
            (keys::REQ_THROUGHPUT, safe_div(n, t).round(4)),
            (keys::AVG_LATENCY, safe_div(self.total_latency, n).round(4)),
            (keys::AVG_INPUT_TOKENS, safe_div(prompt, n).round(4)),
        ];
        if self.ctx.input_only {
            // Deliberately Σtokens / Σlatency, as evalscope (TTFT = latency for these APIs).
            m.push((
                keys::INPUT_THROUGHPUT,
                safe_div(prompt, self.total_ttft).round(4),
            ));
        } else {
            m.push((keys::OUTPUT_THROUGHPUT, safe_div(completion, t).round(4)));
            m.push((keys::TOTAL_THROUGHPUT, safe_div(both, t).round(4)));
            m.push((keys::AVG_TTFT, avg_ttft.ms()));
            m.push((keys::AVG_TPOT, avg_tpot.ms()));
            m.push((keys::AVG_ITL, avg_itl.ms()));
            m.push((keys::AVG_OUTPUT_TOKENS, safe_div(completion, n).round(4)));
            if self.ctx.pd_metrics {
                m.extend(self.pd.summary_keys());
            }
        }
        if self.turns.total_turns > 0 {
            let avg = safe_div(self.turns.total_turns as f64, n);
            if avg.as_f64() > 0.0 {
                m.push((keys::AVG_TURNS, avg.round(4)));
            }
        }
        if self.n_cache > 0 {
            let cached = self.total_cached_tokens as f64 * 100.0;
            let pct = safe_div(cached, self.total_prompt_tokens_for_cache as f64);
            if pct.as_f64() >= 0.0 {
                m.push((keys::KV_CACHE_HIT_RATE, pct.round(4)));
            }
        }
        let t = &self.turns;
        if t.n_first > 0 {
            m.push((
                keys::AVG_FIRST_TURN_TTFT,
                PyNum::Float(t.first_ttft / t.n_first as f64).ms(),
            ));
        }
        if t.n_later > 0 {
            m.push((
                keys::AVG_LATER_TURN_TTFT,
                PyNum::Float(t.later_ttft / t.n_later as f64).ms(),
            ));
        }
        if self.n_decoded > 0 {
            let per_iter = self.total_decoded_per_iter / self.n_decoded as f64;
            let accept = (1.0 - 1.0 / per_iter).clamp(0.0, 1.0);
            m.push((
                keys::AVG_DECODED_TOK_PER_ITER,
                PyNum::Float(per_iter).round(4),
            ));
            m.push((keys::SPEC_ACCEPT_RATE, PyNum::Float(accept).round(4)));
        }
        m
    }

    fn extras(&self) -> SummaryExtras {
        let wall_input_throughput = self.ctx.input_only.then(|| {
            safe_div(self.total_prompt_tokens as f64, self.wall_time())
                .round(4)
                .as_f64()
        });
        SummaryExtras {
            interrupted: self.interrupted,
            failures_by_kind: self
                .failures
                .iter()
                .map(|(label, n)| (label.to_string(), *n))
                .collect(),
            first_errors: self.first_errors.list(),
            wall_input_throughput,
            client: None,
            load: None,
            phases: None,
            plateau: None,
            goodput: self.goodput.as_ref().map(|g| g.summary(self.wall_time())),
            appended: Vec::new(),
            input_token_error: (self.input_error.n > 0).then(|| {
                let e = self.input_error;
                let n = e.n as f64;
                InputTokenError {
                    requests: e.n,
                    avg_intended: crate::pyjson::round(e.intended as f64 / n, 4),
                    avg_error: crate::pyjson::round(e.error as f64 / n, 4),
                    max_error: e.max_error,
                    exact_pct: crate::pyjson::round(e.exact as f64 * 100.0 / n, 2),
                }
            }),
        }
    }

    /// The full summary, evalscope's formulas and rounding, keys that do not apply at their defaults.
    pub fn summary(&self) -> BenchmarkSummary {
        BenchmarkSummary::from_message(&self.message(), self.extras())
    }

    /// The client's self-diagnostics over the records added (none when only stored rows were replayed):
    /// send lag, CPU use over `cpu`'s window, and for `open_loop` runs TTFT and latency from the intended
    /// send time.
    pub fn client_diagnostics(&self, cpu: CpuUse, open_loop: bool) -> Option<ClientDiagnostics> {
        (!self.client.is_empty()).then(|| client::diagnose(&self.client, cpu, open_loop))
    }

    /// The send lag (seconds) of the measured records at each of [`super::nearest_rank::PERCENTILES`],
    /// nearest rank, unrounded; NaN when none.
    pub fn send_lag_percentiles(&self) -> [f64; 11] {
        self.client.send_lag_percentiles()
    }

    /// The 11-row percentile table over the successful requests.
    pub fn percentiles(&self) -> PercentileTable {
        let mut table = self.rows.table();
        if self.ctx.pd_metrics && !self.ctx.input_only {
            let at = table
                .columns
                .iter()
                .position(|(k, _)| k == "ITL (ms)")
                .map_or(table.columns.len(), |i| i + 1);
            for (i, (key, values)) in self.pd.percentile_columns().into_iter().enumerate() {
                // PD columns are opt-in (--enable-pd-metrics) and spilled like the others.
                let column = super::percentile::percentile_column(values);
                table.columns.insert(at + i, (key.to_string(), column));
            }
        }
        table
    }

    /// Bytes of percentile samples written to disk so far (0 until a column outgrows its memory share).
    pub fn spilled_bytes(&self) -> u64 {
        self.rows.disk_bytes() + self.client.disk_bytes() + self.pd.disk_bytes()
    }

    /// The periodic "every N queries" log text: evalscope's raw metrics message as `json.dumps(indent=2)`
    /// (only the keys that apply: no `Input Throughput (tok/s)` for LLM runs; sentinels as `-1`).
    pub fn running_log_json(&self) -> String {
        message_json_indent2(&self.message())
    }

    /// The same raw metrics message on one line (`json.dumps(message)`): what evalscope hands to the
    /// visualizer after every measured request.
    pub fn running_message_json(&self) -> String {
        message_json_compact(&self.message())
    }
}
