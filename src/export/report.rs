//! `performance_summary.txt`: the end-of-sweep report evalscope prints with rich and saves to the
//! run root, rendered byte for byte as evalscope 1.14.1 writes it (console width 120, no ANSI).
//!
//! Layout (each part separated as rich's `console.print` separates them):
//! 1. a rounded panel with the report title (80 columns);
//! 2. `Basic Information:` (a `SQUARE` table of width 80: columns of 25 and 55 squeezed to 23 + 54);
//! 3. LLM runs: `Performance Overview`, `Per-Request Metrics` and `Workload Throughput` (`HEAVY_HEAD`,
//!    no edge padding, runs sorted by (concurrency, rate) with −1 last, a section line between runs;
//!    the workload table only for runs with a successful request); embedding / rerank runs
//!    (`input_only`): `Detailed Performance Metrics`;
//! 4. llmperf's extras, only when present and always after every evalscope part (so evalscope's text
//!    stays a byte-identical prefix): a `Failures` table (`Conc. | Rate | Kind | Count`), one
//!    `! Run … was interrupted …` line per interrupted run, a `Client Diagnostics` table (client CPU, send
//!    lag, whether the client limited the run) and one `! Run …: WARNING: the client itself limited this
//!    run …` line per run it limited.
//!
//! `llm_sections` returns the LLM tables in print order.

use crate::metrics::{
    columns, BenchmarkSummary, ClientDiagnostics, PercentileTable, TraceSummary,
    WorkloadThroughput, PERCENTILE_LABELS,
};
use crate::pyjson;

use crate::text::format::{fmt_num, py_comma, py_comma_fixed, Unit};
use crate::text::table::{panel, Align, BoxStyle, Column, RichTable};

/// One finished run of the sweep, as the report needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// Concurrency (−1 in open loop); the same value as `summary.concurrency`.
    pub concurrency: i64,
    /// Request rate (−1.0 when not paced); the same value as `summary.request_rate`.
    pub rate: f64,
    /// Planned number of requests (`--number`). evalscope's `Num` column shows the summary's
    /// `Total Requests`, which this equals unless the run was interrupted.
    pub number: u64,
    /// The run's summary.
    pub summary: BenchmarkSummary,
    /// The run's percentile table.
    pub percentiles: PercentileTable,
    /// The run's workload throughput (`None` when no request succeeded).
    pub workload: Option<WorkloadThroughput>,
    /// The run's per-trace summary (`--multi-turn`; empty otherwise).
    pub trace: TraceSummary,
}

/// Sweep-wide facts for the `Basic Information` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportInfo {
    /// `Model` (the model id sent to the server).
    pub model: String,
    /// `Test Dataset` (the dataset plugin name).
    pub dataset: String,
    /// `API Type`.
    pub api: String,
    /// `Alias` row, shown only when set.
    pub alias: Option<String>,
    /// `Endpoint` as `host:port`.
    pub endpoint: String,
    /// `Output Path`: the run root (cut to the column with `…` when longer, as rich does).
    pub output_path: String,
    /// Embedding / rerank API: the `Embedding/Rerank Performance Test Summary` layout.
    pub input_only: bool,
}

/// Appends text the way rich's `console.print` does: the text, then a newline.
#[derive(Default)]
struct Doc(String);

impl Doc {
    fn print(&mut self, text: &str) {
        self.0.push_str(text);
        self.0.push('\n');
    }

    /// `console.print('\n')` (two line breaks), then the table.
    fn print_table(&mut self, table: &RichTable) {
        self.print("\n");
        self.print(&table.render());
    }
}

/// The whole `performance_summary.txt` text, ending in a newline. Empty when evalscope writes no
/// report: no runs, or (embedding) no run with a usable p99 latency.
pub fn performance_summary(info: &ReportInfo, runs: &[RunReport]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let sorted = sorted_runs(runs);
    let mut doc = Doc::default();
    if info.input_only {
        let rows: Vec<(usize, Vec<String>)> = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| embedding_row(r).map(|row| (i, row)))
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        let valid = rows.iter().map(|(i, _)| &runs[*i].summary);
        let (tokens, time) = totals(valid, |s| s.avg_input_tokens);
        let rate = if time > 0.0 {
            Unit::TokPerSec.fmt_with_unit(tokens / time)
        } else {
            "N/A".to_string()
        };
        doc.print(&panel("Embedding/Rerank Performance Test Summary", 80));
        let token_rows = [
            (
                "Total Input Tokens",
                format!("{} tokens", py_comma_fixed(tokens, 0)),
            ),
            ("Avg Input Rate", rate),
        ];
        print_basic_info(&mut doc, info, &token_rows, time);
        doc.print_table(&embedding_table(rows.into_iter().map(|(_, r)| r).collect()));
    } else {
        let (tokens, time) = totals(runs.iter().map(|r| &r.summary), |s| s.avg_output_tokens);
        let rate = if time > 0.0 {
            Unit::TokPerSec.fmt_with_unit(tokens / time)
        } else {
            "N/A".to_string()
        };
        doc.print(&panel("Performance Test Summary Report", 80));
        let token_rows = [
            ("Total Generated", format!("{} tokens", py_comma(tokens))),
            ("Avg Output Rate", rate),
        ];
        print_basic_info(&mut doc, info, &token_rows, time);
        for table in llm_sections(&sorted) {
            doc.print_table(&table);
        }
    }
    print_llmperf_extras(&mut doc, &sorted);
    doc.0
}

/// Runs ordered by (concurrency, rate) with −1 treated as +∞; equal keys keep their order.
fn sorted_runs(runs: &[RunReport]) -> Vec<&RunReport> {
    let key = |r: &RunReport| {
        let inf = |v: f64| if v == -1.0 { f64::INFINITY } else { v };
        (inf(r.concurrency as f64), inf(r.rate))
    };
    let mut sorted: Vec<&RunReport> = runs.iter().collect();
    sorted.sort_by(|a, b| {
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    sorted
}

/// (Σ per-request tokens × successes, Σ test durations), summed in run order as evalscope does.
fn totals<'a>(
    summaries: impl Iterator<Item = &'a BenchmarkSummary>,
    avg_tokens: impl Fn(&BenchmarkSummary) -> f64,
) -> (f64, f64) {
    summaries.fold((0.0, 0.0), |(tokens, time), s| {
        (
            tokens + avg_tokens(s) * s.success_requests as f64,
            time + s.test_duration_s,
        )
    })
}

fn print_basic_info(doc: &mut Doc, info: &ReportInfo, token_rows: &[(&str, String)], time: f64) {
    let mut table = RichTable::new(
        BoxStyle::Square,
        vec![
            Column::fixed("Name", Align::Left, 25),
            Column::fixed("Value", Align::Left, 55),
        ],
    );
    table.show_header = false;
    table.width = Some(80);
    let mut row = |k: &str, v: &str| table.push(vec![k.to_string(), v.to_string()]);
    row("Model", &info.model);
    row("Test Dataset", &info.dataset);
    row("API Type", &info.api);
    if let Some(alias) = &info.alias {
        row("Alias", alias);
    }
    row("Endpoint", &info.endpoint);
    for (k, v) in token_rows {
        row(k, v);
    }
    row("Total Test Time", &Unit::Duration.fmt_with_unit(time));
    row("Output Path", &info.output_path);
    doc.print("\nBasic Information:");
    doc.print(&table.render());
}

/// evalscope's `success_rate`: `round(success / total * 100, 1)`, 0 without requests.
fn success_rate(s: &BenchmarkSummary) -> f64 {
    if s.total_requests > 0 {
        pyjson::round(
            s.success_requests as f64 / s.total_requests as f64 * 100.0,
            1,
        )
    } else {
        0.0
    }
}

/// `Conc.` and `Rate` cells of the LLM tables (`-` for −1).
pub(super) fn conc_rate(r: &RunReport) -> (String, String) {
    let conc = if r.concurrency == -1 {
        "-".to_string()
    } else {
        r.concurrency.to_string()
    };
    let rate = if r.rate == -1.0 {
        "-".to_string()
    } else {
        Unit::ReqPerSec.fmt(r.rate)
    };
    (conc, rate)
}

/// `PercentileResult.get_p`: the value at `label` of column `key`, 0.0 when the column is absent.
fn get_p(p: &PercentileTable, label: &str, key: &str) -> f64 {
    let idx = PERCENTILE_LABELS.iter().position(|l| *l == label);
    p.columns
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, values)| idx.map(|i| values[i]))
        .unwrap_or(0.0)
}

/// A HEAVY_HEAD table without edge padding, as all of evalscope's report tables are.
pub(super) fn report_table(title: &str, columns: Vec<Column>) -> RichTable {
    let mut table = RichTable::new(BoxStyle::HeavyHead, columns);
    table.title = Some(title.to_string());
    table.pad_edge = false;
    table
}

/// The LLM report tables after `Basic Information`, in print order.
fn llm_sections(runs: &[&RunReport]) -> Vec<RichTable> {
    let mut tables = vec![overview_table(runs), per_request_table(runs)];
    tables.extend(super::report_trace::per_trace_table(runs));
    tables.extend(workload_table(runs));
    tables
}

/// `Workload Throughput`: four rate rows per run that had a successful request; `None` when no run had.
/// The window headers come from the first such run (evalscope assumes they are the same for all).
fn workload_table(runs: &[&RunReport]) -> Option<RichTable> {
    let entries: Vec<(&RunReport, &WorkloadThroughput)> = runs
        .iter()
        .filter_map(|r| r.workload.as_ref().map(|w| (*r, w)))
        .filter(|(_, w)| !w.rows.is_empty())
        .collect();
    let first = entries.first()?.1;
    let columns = vec![
        Column::new("Conc.", Align::Right),
        Column::new("Rate", Align::Right),
        Column::new("Metric (tok/s)", Align::Left),
        Column::new("Overall", Align::Right),
        Column::new(&first.last_label(), Align::Right),
        Column::new(&first.steady_label(), Align::Right),
    ];
    let mut table = report_table("Workload Throughput", columns);
    for (i, (r, w)) in entries.iter().enumerate() {
        if i > 0 {
            table.section();
        }
        let mut first_row = Some(conc_rate(r));
        for row in &w.rows {
            let (c, rate) = first_row.take().unwrap_or_default();
            table.push(vec![
                c,
                rate,
                row.metric.to_string(),
                Unit::TokPerSec.fmt(row.overall),
                Unit::TokPerSec.fmt(row.last_window),
                Unit::TokPerSec.fmt(row.steady_state),
            ]);
        }
    }
    Some(table)
}

fn overview_table(runs: &[&RunReport]) -> RichTable {
    let right = |h: &str| Column::new(h, Align::Right);
    let has_traces = runs.iter().any(|r| !r.trace.is_empty());
    let mut columns = ["Conc.", "Rate", "Num", "RPS", "Gen/s", "Success"]
        .map(right)
        .to_vec();
    if has_traces {
        columns.push(right("Traces"));
    }
    let mut table = report_table("Performance Overview", columns);
    for r in runs {
        let (conc, rate) = conc_rate(r);
        let s = &r.summary;
        let mut row = vec![
            conc,
            rate,
            Unit::Count.fmt(s.total_requests as f64),
            Unit::ReqPerSec.fmt(s.req_throughput),
            Unit::TokPerSec.fmt(s.output_throughput),
            Unit::Percent.fmt_with_unit(success_rate(s)),
        ];
        if has_traces {
            row.push(if r.trace.is_empty() {
                "-".to_string()
            } else {
                r.trace.n_traces.to_string()
            });
        }
        table.push(row);
    }
    table
}

/// Reads one optional value of a summary.
type SummaryField = fn(&BenchmarkSummary) -> Option<f64>;

fn per_request_table(runs: &[&RunReport]) -> RichTable {
    let any = |f: fn(&BenchmarkSummary) -> bool| runs.iter().any(|r| f(&r.summary));
    let has_ttft = any(|s| s.avg_ttft_ms != 0.0);
    let has_tpot = any(|s| s.avg_tpot_ms != 0.0);
    let pd_rows: [(&str, SummaryField); 3] = [
        ("Steady ITL (ms)", |s| s.avg_steady_itl_ms),
        ("PD Handoff Latency (ms)", |s| s.avg_pd_handoff_latency_ms),
        ("PD Handoff Overhead (ms)", |s| s.avg_pd_handoff_overhead_ms),
    ];
    let has_pd: Vec<bool> = pd_rows
        .iter()
        .map(|(_, get)| runs.iter().any(|r| get(&r.summary).is_some()))
        .collect();
    let has_output = any(|s| s.avg_output_tokens != 0.0);
    let has_cache = any(|s| s.kv_cache_hit_rate_pct.is_some_and(|v| v >= 0.0));
    let has_turns = any(|s| s.avg_turns.is_some_and(|v| v > 0.0));
    let has_first_ttft = any(|s| s.avg_first_turn_ttft_ms.is_some());
    let has_later_ttft = any(|s| s.avg_later_turn_ttft_ms.is_some());

    let columns = vec![
        Column::new("Conc.", Align::Right),
        Column::new("Rate", Align::Right),
        Column::new("Metric", Align::Left),
        Column::new("avg", Align::Right),
        Column::new("p50", Align::Right),
        Column::new("p99", Align::Right),
        Column::new("max", Align::Right),
    ];
    let mut table = report_table("Per-Request Metrics", columns);
    for (i, r) in runs.iter().enumerate() {
        if i > 0 {
            table.section();
        }
        let s = &r.summary;
        let (conc, rate) = conc_rate(r);
        let mut first = Some((conc, rate));
        let mut add = |table: &mut RichTable, metric: &str, cells: [String; 4]| {
            let (c, r) = first.take().unwrap_or_default();
            let mut row = vec![c, r, metric.to_string()];
            row.extend(cells);
            table.push(row);
        };
        // A percentile-backed row: avg, then p50 / p99 / max ("-" where the value is 0 or absent).
        let with_p = |avg: f64, key: &str, unit: Unit| {
            let p = |label: &str| {
                let v = get_p(&r.percentiles, label, key);
                if v == 0.0 {
                    "-".to_string()
                } else {
                    unit.fmt(v)
                }
            };
            [unit.fmt(avg), p("50%"), p("99%"), p("max")]
        };
        let scalar = |value: Option<String>| {
            let dash = || "-".to_string();
            [value.unwrap_or_else(dash), dash(), dash(), dash()]
        };

        add(
            &mut table,
            "Latency (s)",
            with_p(s.avg_latency_s, columns::LATENCY_S, Unit::Seconds),
        );
        if has_ttft {
            add(
                &mut table,
                "TTFT (ms)",
                with_p(s.avg_ttft_ms, columns::TTFT_MS, Unit::Millis),
            );
        }
        if has_tpot {
            add(
                &mut table,
                "TPOT (ms)",
                with_p(s.avg_tpot_ms, columns::TPOT_MS, Unit::Millis),
            );
        }
        for ((key, get), shown) in pd_rows.iter().zip(&has_pd) {
            if *shown {
                let mut cells = with_p(get(s).unwrap_or(0.0), key, Unit::Millis);
                if get(s).is_none() {
                    cells[0] = "-".to_string();
                }
                add(&mut table, key, cells);
            }
        }
        let input = with_p(s.avg_input_tokens, columns::INPUT_TOKENS, Unit::Count);
        add(&mut table, "Input Tokens", input);
        if has_output {
            let output = with_p(s.avg_output_tokens, columns::OUTPUT_TOKENS, Unit::Count);
            add(&mut table, "Output Tokens", output);
        }
        if has_turns {
            let turns = s.avg_turns.map(|v| Unit::AvgTokens.fmt(v));
            add(&mut table, "Turns/Req", scalar(turns));
        }
        if has_cache {
            let hit = s.kv_cache_hit_rate_pct.filter(|v| *v >= 0.0);
            let cells = scalar(hit.map(|v| Unit::Percent.fmt_with_unit(v)));
            add(&mut table, "Cache Hit (%)", cells);
        }
        if has_first_ttft {
            let v = s.avg_first_turn_ttft_ms.map(|v| Unit::Millis.fmt(v));
            add(&mut table, "1st-Turn TTFT (ms)", scalar(v));
        }
        if has_later_ttft {
            let v = s.avg_later_turn_ttft_ms.map(|v| Unit::Millis.fmt(v));
            add(&mut table, "Subseq. TTFT (ms)", scalar(v));
        }
        if has_tpot {
            let tpot = s.avg_tpot_ms;
            let decode = (tpot > 0.0).then(|| Unit::TokPerSec.fmt(1000.0 / tpot));
            add(&mut table, "Decode toks/s", scalar(decode));
        }
    }
    table
}

/// One row of the embedding `Detailed Performance Metrics` table; `None` where evalscope skips the
/// run (its p99 latency is 0 or missing).
fn embedding_row(r: &RunReport) -> Option<Vec<String>> {
    let s = &r.summary;
    let p99_latency = get_p(&r.percentiles, "99%", "Latency (s)");
    if p99_latency == 0.0 {
        return None;
    }
    let p99_tps = get_p(&r.percentiles, "99%", "Input (tok/s)");
    let inf_or = |v: f64, fmt: &dyn Fn(f64) -> String| {
        if v == -1.0 {
            "INF".to_string()
        } else {
            fmt(v)
        }
    };
    Some(vec![
        inf_or(r.concurrency as f64, &|v| (v as i64).to_string()),
        inf_or(r.rate, &|v| Unit::ReqPerSec.fmt(v)),
        Unit::ReqPerSec.fmt(s.req_throughput),
        Unit::Seconds.fmt(s.avg_latency_s),
        Unit::Seconds.fmt(p99_latency),
        Unit::TokPerSec.fmt(s.input_throughput),
        Unit::TokPerSec.fmt(p99_tps),
        Unit::AvgTokens.fmt(s.avg_input_tokens),
        Unit::Percent.fmt_with_unit(success_rate(s)),
    ])
}

/// The embedding table; rows sorted by their displayed (Conc., Rate) with `INF` last.
fn embedding_table(mut rows: Vec<Vec<String>>) -> RichTable {
    let key = |row: &Vec<String>| {
        let num = |s: &str| s.parse::<f64>().unwrap_or(f64::INFINITY);
        (num(&row[0]), num(&row[1]))
    };
    rows.sort_by(|a, b| {
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let headers = [
        "Conc.",
        "Rate",
        "RPS",
        "Avg\nLat.(s)",
        "P99\nLat.(s)",
        "Avg\nInp.TPS",
        "P99\nInp.TPS",
        "Avg\nInp.Tok",
        "Success\nRate",
    ];
    let columns = headers.map(|h| Column::new(h, Align::Right)).to_vec();
    let mut table = report_table("Detailed Performance Metrics", columns);
    for row in rows {
        table.push(row);
    }
    table
}

/// llmperf's additions, after every evalscope part: failures by kind, interrupted runs.
fn print_llmperf_extras(doc: &mut Doc, runs: &[&RunReport]) {
    let failing: Vec<&&RunReport> = runs
        .iter()
        .filter(|r| !r.summary.extras.failures_by_kind.is_empty())
        .collect();
    if !failing.is_empty() {
        let columns = vec![
            Column::new("Conc.", Align::Right),
            Column::new("Rate", Align::Right),
            Column::new("Kind", Align::Left),
            Column::new("Count", Align::Right),
        ];
        let mut table = report_table("Failures", columns);
        for (i, r) in failing.iter().enumerate() {
            if i > 0 {
                table.section();
            }
            let mut first = Some(conc_rate(r));
            for (kind, count) in &r.summary.extras.failures_by_kind {
                let (c, rate) = first.take().unwrap_or_default();
                table.push(vec![c, rate, kind.clone(), count.to_string()]);
            }
        }
        doc.print_table(&table);
    }
    let interrupted: Vec<String> = runs
        .iter()
        .filter(|r| r.summary.extras.interrupted)
        .map(|r| {
            format!(
                "! Run {} was interrupted: results cover the requests completed before the signal.",
                run_label(r)
            )
        })
        .collect();
    if !interrupted.is_empty() {
        doc.print("");
        for line in interrupted {
            doc.print(&line);
        }
    }
    print_client_diagnostics(doc, runs);
}

/// The client's self-diagnostics per run (a `Client` table), then one `! Run …: WARNING …` line per run
/// the client itself limited.
fn print_client_diagnostics(doc: &mut Doc, runs: &[&RunReport]) {
    let with: Vec<(&&RunReport, &ClientDiagnostics)> = runs
        .iter()
        .filter_map(|r| r.summary.extras.client.as_ref().map(|c| (r, c)))
        .collect();
    if with.is_empty() {
        return;
    }
    let right = |h: &str| Column::new(h, Align::Right);
    let columns = [
        "Conc.",
        "Rate",
        "CPU%1core",
        "CPU%all",
        "Sched ms",
        "Lag p50 ms",
        "Lag p99 ms",
        "Read lag p99 ms",
        "Limited",
    ]
    .map(right);
    let mut table = report_table("Client Diagnostics", columns.to_vec());
    for (r, c) in &with {
        let (conc, rate) = conc_rate(r);
        table.push(vec![
            conc,
            rate,
            fmt_num(c.cpu_pct_one_core, 1),
            fmt_num(c.cpu_pct_all_cores, 1),
            fmt_num(c.sched_delay_ms, 3),
            fmt_num(c.send_lag_p50_ms, 3),
            fmt_num(c.send_lag_p99_ms, 3),
            fmt_num(c.read_lag_p99_ms, 3),
            if c.limits.is_empty() { "no" } else { "YES" }.to_string(),
        ]);
    }
    doc.print_table(&table);
    let warnings: Vec<String> = with
        .iter()
        .filter_map(|(r, c)| c.warning().map(|w| format!("! Run {}: {w}", run_label(r))))
        .collect();
    if !warnings.is_empty() {
        doc.print("");
        for line in warnings {
            doc.print(&line);
        }
    }
}

/// `conc 4`, `rate 5`, or `conc 4, rate 5` for a run.
fn run_label(r: &RunReport) -> String {
    let mut parts = Vec::new();
    if r.concurrency != -1 {
        parts.push(format!("conc {}", r.concurrency));
    }
    if r.rate != -1.0 {
        parts.push(format!("rate {}", Unit::ReqPerSec.fmt(r.rate)));
    }
    if parts.is_empty() {
        "conc -".to_string()
    } else {
        parts.join(", ")
    }
}
