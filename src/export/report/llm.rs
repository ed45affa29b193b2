//! The LLM tables of the end-of-sweep text report after `Basic Information`: `Performance Overview`,
//! `Per-Request Metrics` and `Workload Throughput` (the `Per-Trace Metrics` table is [`super::trace`]).

use super::{conc_rate, get_p, report_table, success_rate, RunReport};
use crate::metrics::{columns, BenchmarkSummary, WorkloadThroughput};
use crate::text::format::Unit;
use crate::text::table::{Align, Column, RichTable};

/// The LLM report tables after `Basic Information`, in print order.
pub(super) fn llm_sections(runs: &[&RunReport]) -> Vec<RichTable> {
    let mut tables = vec![overview_table(runs), per_request_table(runs)];
    tables.extend(super::trace::per_trace_table(runs));
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
