//! `--server-metrics`: the server's side of each run, read from its Prometheus endpoints.
//!
//! [`RunScrape::start`] starts the scraper ([`scrape`]) before a run's first request and waits a short
//! while ([`BASELINE_WAIT`]) for its baseline scrape; [`RunScrape::finish`] takes the final scrape after the
//! last response and turns the scrapes into `server_metrics.json` and the extra summary keys ([`report`]).
//! A missing, slow or broken endpoint is a warning: the run never waits more than [`BASELINE_WAIT`] before
//! and [`FINAL_WAIT`] after, never fails, and the keys it cannot compute are absent.

pub mod analyze;
pub mod known;
pub mod prom;
pub mod report;
pub mod scrape;
mod scrape_error;

use std::time::Duration;

use reqwest::Url;

pub use report::ServerReport;
use scrape::Scraper;

/// The longest a run waits for the baseline scrape before sending.
pub const BASELINE_WAIT: Duration = Duration::from_secs(2);

/// The longest a run waits for the final scrape after its last response.
pub const FINAL_WAIT: Duration = Duration::from_secs(5);

/// What `--server-metrics` asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerMetricsPlan {
    /// Endpoints given; empty = `<scheme>://<host:port>/metrics` of each endpoint URL (each `--url` with
    /// `--url-strategy`).
    pub urls: Vec<Url>,
    /// `--server-metrics-interval`.
    pub interval: Duration,
}

impl ServerMetricsPlan {
    /// The endpoints to scrape for a run against `endpoints` (one server's `/metrics` once).
    pub fn endpoints(&self, endpoints: &[Url]) -> Vec<Url> {
        if !self.urls.is_empty() {
            return self.urls.clone();
        }
        let mut urls: Vec<Url> = Vec::new();
        for endpoint in endpoints {
            let mut url = endpoint.clone();
            url.set_path("/metrics");
            url.set_query(None);
            url.set_fragment(None);
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
        urls
    }
}

/// The scraper of one run.
pub struct RunScrape {
    scraper: Scraper,
    interval: Duration,
}

impl RunScrape {
    /// Starts scraping for a run against `endpoints` and waits up to [`BASELINE_WAIT`] for the baseline
    /// (blocking: call it from a blocking context). `None` (with a warning) when the thread cannot start.
    pub fn start(plan: &ServerMetricsPlan, endpoints: &[Url]) -> Option<RunScrape> {
        let urls = plan.endpoints(endpoints);
        let shown: Vec<&str> = urls.iter().map(Url::as_str).collect();
        tracing::info!(
            "Scraping server metrics from {} every {} s",
            shown.join(", "),
            plan.interval.as_secs_f64()
        );
        let scraper = match Scraper::start(urls, plan.interval) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("--server-metrics: cannot start the scraper thread: {e}");
                return None;
            }
        };
        if !scraper.wait_baseline(BASELINE_WAIT) {
            tracing::warn!(
                "--server-metrics: no baseline scrape within {} s; the run starts without it (server-side counter deltas will be absent)",
                BASELINE_WAIT.as_secs()
            );
        }
        Some(RunScrape {
            scraper,
            interval: plan.interval,
        })
    }

    /// The latest values of the server's known gauges (running and waiting requests, KV cache, GPU),
    /// updated by the scraper thread after every good scrape.
    pub fn latest(&self) -> scrape::LatestGauges {
        self.scraper.latest()
    }

    /// Takes the final scrape (waiting up to [`FINAL_WAIT`]) and builds the report; warns about every
    /// endpoint that failed. `client_output_tokens` is the run's Σ output tokens (for energy per token
    /// when the server exposes no token counter). Blocking.
    pub fn finish(self, client_output_tokens: f64) -> Option<ServerReport> {
        let Some(logs) = self.scraper.finish(FINAL_WAIT) else {
            tracing::warn!(
                "--server-metrics: no final scrape within {} s; server metrics are absent for this run",
                FINAL_WAIT.as_secs()
            );
            return None;
        };
        for log in &logs {
            if log.failures > 0 {
                tracing::warn!(
                    "--server-metrics: {} of {} scrapes of {} failed (last: {}){}",
                    log.failures,
                    log.attempts,
                    log.url,
                    log.last_error.as_deref().unwrap_or("?"),
                    if log.baseline_ok && log.final_ok {
                        ""
                    } else {
                        "; its counter and histogram deltas are absent"
                    }
                );
            }
        }
        Some(report::build(&logs, self.interval, client_output_tokens))
    }
}

/// Starts scraping for one run (async wrapper of [`RunScrape::start`]); `None` when `--server-metrics` is
/// off.
pub async fn start_for_run(
    plan: Option<&ServerMetricsPlan>,
    endpoints: &[Url],
) -> Option<RunScrape> {
    let (plan, endpoints) = (plan?.clone(), endpoints.to_vec());
    tokio::task::spawn_blocking(move || RunScrape::start(&plan, &endpoints))
        .await
        .ok()
        .flatten()
}

/// Ends one run's scraping: appends the `Server …` keys (and the client-vs-server TTFT key) to `summary`
/// and returns the server's series, for the run's folder (`None` without a scrape or its result).
pub async fn finish_for_run(
    scrape: Option<RunScrape>,
    summary: &mut crate::metrics::BenchmarkSummary,
) -> Option<serde_json::Value> {
    let scrape = scrape?;
    let output_tokens = summary.avg_output_tokens * summary.success_requests as f64;
    let report = tokio::task::spawn_blocking(move || scrape.finish(output_tokens))
        .await
        .ok()
        .flatten();
    let report = report?;
    let overhead = report::client_vs_server(summary.avg_ttft_ms, &report.summary_keys);
    log_headline(summary.avg_ttft_ms, &report.summary_keys);
    summary.extras.appended.extend(report.summary_keys);
    summary.extras.appended.extend(overhead);
    Some(report.json)
}

/// One log line with the server figures a user compares first.
fn log_headline(client_avg_ttft_ms: f64, keys: &[(String, serde_json::Value)]) {
    let get = |k: &str| {
        keys.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.to_string())
    };
    let parts: Vec<String> = [
        ("Server Avg TTFT (ms)", "server TTFT avg {} ms"),
        ("Server Avg Queue Time (ms)", "queue avg {} ms"),
        ("Server Generation Tokens", "{} tokens generated"),
        ("Server Max Running Requests", "max {} running"),
        ("Server Max KV Cache Usage (%)", "KV cache max {} %"),
    ]
    .iter()
    .filter_map(|(k, f)| get(k).map(|v| f.replace("{}", &v)))
    .collect();
    if !parts.is_empty() {
        tracing::info!(
            "Server metrics: {} (client TTFT avg {client_avg_ttft_ms} ms); see server_metrics.json",
            parts.join(", ")
        );
    }
}
