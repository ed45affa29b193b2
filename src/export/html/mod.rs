//! `perf_report.html`: one self-contained page at the run root after every sweep (also after an
//! interrupted one, marked as such). Unlike evalscope's report (Plotly from a CDN, blank offline), it needs
//! no network and no script: the charts are inline SVG drawn here ([`svg`]), styled by one inline
//! stylesheet with light, dark and print variants.
//!
//! The per-request data (histograms, request timeline, token rate) is read back from each run's
//! the run's database ([`data`]); percentiles come from the runs' exact tables, never from a sample. A run
//! whose database cannot be read still gets its tables, with "No data" charts, and a warning.

mod breakdown;
mod data;
mod goodput;
mod page;
mod phases;
mod sections;
mod server;
mod svg;
mod timeline;
mod turns;
mod view;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::report::{ReportInfo, RunReport};

/// The page's stylesheet.
const STYLE: &str = include_str!("style.css");

/// Sweep-wide facts for the page header and `Basic information`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlHeader {
    /// Model name.
    pub model: String,
    /// `host:port`.
    pub endpoint: String,
    /// Dataset name.
    pub dataset: String,
    /// API plugin.
    pub api: String,
    /// `--alias`.
    pub alias: Option<String>,
    /// The run root.
    pub output_path: String,
    /// llmperf's version.
    pub version: String,
    /// When the page was written (local time, `YYYY-mm-dd HH:MM:SS`).
    pub generated_at: String,
    /// The sweep was stopped by a signal.
    pub interrupted: bool,
}

impl HtmlHeader {
    /// The header for `info`, stamped now.
    pub fn new(info: &ReportInfo, interrupted: bool) -> Self {
        HtmlHeader {
            model: info.model.clone(),
            endpoint: info.endpoint.clone(),
            dataset: info.dataset.clone(),
            api: info.api.clone(),
            alias: info.alias.clone(),
            output_path: info.output_path.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            generated_at: chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string(),
            interrupted,
        }
    }
}

/// One finished run: its report data and where its database is.
#[derive(Debug, Clone)]
pub struct HtmlRun {
    /// The run folder name.
    pub name: String,
    /// Summary, percentiles, workload.
    pub report: RunReport,
    /// The run's rows (SQLite).
    pub db_path: PathBuf,
    /// The server's series (`--server-metrics`), when the run has them.
    pub server: Option<serde_json::Value>,
    /// The run's summary file text (its extra keys are the client diagnostics).
    pub summary_json: String,
}

/// Builds the page for `runs` (reading their databases one at a time).
pub fn render(header: &HtmlHeader, runs: &[HtmlRun]) -> String {
    let views: Vec<view::RunView> = runs
        .iter()
        .map(|r| {
            let data = data::load(&r.db_path, &r.report.percentiles).unwrap_or_else(|e| {
                tracing::warn!(
                    "perf_report.html: no per-request charts for {}: {e:#}",
                    r.name
                );
                data::RunData::default()
            });
            view::RunView {
                name: r.name.clone(),
                report: r.report.clone(),
                summary: serde_json::from_str(&r.summary_json.replace("NaN", "null"))
                    .unwrap_or_default(),
                data,
                server: r
                    .server
                    .clone()
                    .map(|json| view::ServerView::new(json, &r.db_path)),
            }
        })
        .collect();
    page::render(header, &views)
}

/// Writes the page to `path`; returns its size in bytes.
pub fn write_report(path: &Path, header: &HtmlHeader, runs: &[HtmlRun]) -> Result<u64> {
    let html = render(header, runs);
    std::fs::write(path, &html).with_context(|| format!("writing {}", path.display()))?;
    Ok(html.len() as u64)
}

/// Escapes text for HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
