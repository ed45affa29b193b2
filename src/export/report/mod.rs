//! The end-of-sweep text report evalscope prints with rich and saves to the
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
//!    run …` line per run it limited; then the `Delivered Load` and `Connection Phases` tables.
//!
//! The LLM tables are [`llm`] (`llm_sections`, in print order) and [`trace`]; llmperf's extras are
//! [`extras`]; the embedding table and the frame (panel, basic information) are here.

mod extras;
mod llm;
mod load;
mod phases;

pub(crate) use phases::phase_cell;
mod trace;

use crate::metrics::{
    BenchmarkSummary, PercentileTable, TraceSummary, WorkloadThroughput, PERCENTILE_LABELS,
};
use crate::pyjson;

use crate::text::format::{py_comma, py_comma_fixed, Unit};
use crate::text::table::{panel, Align, BoxStyle, Column, RichTable};

/// One finished run of the sweep, as the report needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// The concurrency cap, `None` in open loop.
    pub concurrency: Option<u64>,
    /// The request rate, `None` when not paced.
    pub rate: Option<f64>,
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

/// The whole end-of-sweep text report, ending in a newline. Empty when evalscope writes no
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
        for table in llm::llm_sections(&sorted) {
            doc.print_table(&table);
        }
    }
    extras::print_llmperf_extras(&mut doc, &sorted);
    load::print_delivered_load(&mut doc, &sorted);
    phases::print_phases(&mut doc, &sorted);
    load::print_plateau(&mut doc, &sorted);
    doc.0
}

impl RunReport {
    /// The order of runs in reports: by concurrency, then rate, open loop and unpaced last.
    pub fn sort_key(&self) -> (f64, f64) {
        (
            self.concurrency.map_or(f64::INFINITY, |c| c as f64),
            self.rate.unwrap_or(f64::INFINITY),
        )
    }

    /// The concurrency and rate a summary file records (evalscope writes −1 for none).
    pub fn load_of(summary: &BenchmarkSummary) -> (Option<u64>, Option<f64>) {
        (
            u64::try_from(summary.concurrency).ok(),
            Some(summary.request_rate).filter(|r| *r > 0.0),
        )
    }
}

/// Runs ordered by [`RunReport::sort_key`]; equal keys keep their order.
fn sorted_runs(runs: &[RunReport]) -> Vec<&RunReport> {
    let key = RunReport::sort_key;
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

/// `Conc.` and `Rate` cells of the LLM tables (`-` for none, as evalscope shows its −1).
fn conc_rate(r: &RunReport) -> (String, String) {
    let conc = r.concurrency.map_or("-".to_string(), |c| c.to_string());
    let rate = r.rate.map_or("-".to_string(), |v| Unit::ReqPerSec.fmt(v));
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
fn report_table(title: &str, columns: Vec<Column>) -> RichTable {
    let mut table = RichTable::new(BoxStyle::HeavyHead, columns);
    table.title = Some(title.to_string());
    table.pad_edge = false;
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
    let inf = || "INF".to_string();
    Some(vec![
        r.concurrency.map_or_else(inf, |c| c.to_string()),
        r.rate.map_or_else(inf, |v| Unit::ReqPerSec.fmt(v)),
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

#[cfg(test)]
mod tests;
