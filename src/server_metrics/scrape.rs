//! The scraper: one OS thread per run with its own blocking HTTP client (its own connection, never the
//! request pool, never a task of the request runtime), reading every endpoint once at the start (the
//! baseline), then every interval, and once more when told the run has ended (the final scrape).
//!
//! A failed scrape (refused, HTTP error, timeout — [`SCRAPE_TIMEOUT`] for the baseline and the final scrape,
//! about one interval for the others — text that is not the exposition format) is counted and its reason
//! kept; it never reaches the run. The thread keeps, per endpoint, the
//! first and the last good exposition in full and, from every good scrape, the gauge values over time;
//! after every good scrape it also replaces the latest values of the known gauges ([`LatestGauges`]),
//! which a live view reads.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::Url;

use super::analyze::series_key;
use super::prom::{self, Exposition, Kind};
use super::scrape_error::ScrapeError;
use crate::clock;

/// How long the baseline and the final scrape may take before they count as failed.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

/// The bounds of a periodic scrape's timeout: the interval, within these.
const PERIODIC_TIMEOUT_MIN: Duration = Duration::from_millis(200);

/// Largest `/metrics` body read (vLLM's is ~100 KiB; more is not a metrics page).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The latest values of the known gauges ([`super::known::GAUGES`], combined over their series and
/// scaled, summed over the endpoints), by display name.
pub type LatestGauges = Arc<Mutex<Vec<(&'static str, f64)>>>;

/// The known gauges of one exposition, combined and scaled as the summary keys are.
fn known_gauges(exposition: &Exposition) -> Vec<(&'static str, f64)> {
    use super::known::{Combine, GAUGES};
    GAUGES
        .iter()
        .filter_map(|(stem, candidates, scale, combine)| {
            let family = candidates.iter().find_map(|c| exposition.family(c))?;
            let values: Vec<f64> = family.samples.iter().map(|s| s.value).collect();
            if values.is_empty() {
                return None;
            }
            let v = match combine {
                Combine::Sum => values.iter().sum(),
                Combine::Mean => values.iter().sum::<f64>() / values.len() as f64,
                Combine::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            };
            Some((*stem, v * scale))
        })
        .collect()
}

/// What was scraped from one endpoint.
#[derive(Debug, Clone)]
pub struct EndpointLog {
    /// The endpoint.
    pub url: Url,
    /// Scrapes attempted.
    pub attempts: u64,
    /// Scrapes that failed.
    pub failures: u64,
    /// Why the last failed scrape failed.
    pub last_error: Option<String>,
    /// The first good scrape: `(t_s, exposition)`, `t_s` on [`crate::clock`].
    pub first: Option<(f64, Exposition)>,
    /// The last good scrape.
    pub last: Option<(f64, Exposition)>,
    /// Whether `first` came from the baseline scrape (taken before any request of the run).
    pub baseline_ok: bool,
    /// Whether `last` came from the final scrape (taken after every request of the run).
    pub final_ok: bool,
    /// Gauge series → `(t_s, value)` from every good scrape.
    pub gauges: BTreeMap<String, (String, Vec<(f64, f64)>)>,
}

impl EndpointLog {
    fn new(url: Url) -> Self {
        EndpointLog {
            url,
            attempts: 0,
            failures: 0,
            last_error: None,
            first: None,
            last: None,
            baseline_ok: false,
            final_ok: false,
            gauges: BTreeMap::new(),
        }
    }

    /// Scrapes once; returns whether it succeeded.
    fn scrape(&mut self, client: &reqwest::blocking::Client, timeout: Duration) -> bool {
        self.attempts += 1;
        match fetch(client, &self.url, timeout) {
            Ok(exposition) => {
                let t_s = clock::now_s();
                for f in exposition.families.iter().filter(|f| f.kind == Kind::Gauge) {
                    for s in &f.samples {
                        self.gauges
                            .entry(series_key(s))
                            .or_insert_with(|| (f.name.clone(), Vec::new()))
                            .1
                            .push((t_s, s.value));
                    }
                }
                if self.first.is_none() {
                    self.first = Some((t_s, exposition.clone()));
                }
                self.last = Some((t_s, exposition));
                true
            }
            Err(e) => {
                self.failures += 1;
                self.last_error = Some(e.to_string());
                false
            }
        }
    }
}

/// GET and parse one endpoint.
fn fetch(
    client: &reqwest::blocking::Client,
    url: &Url,
    timeout: Duration,
) -> Result<Exposition, ScrapeError> {
    let resp = client
        .get(url.clone())
        .timeout(timeout)
        .send()
        .map_err(|e| ScrapeError::Transport(crate::record::one_line(&format!("{e:#}"))))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(ScrapeError::Status(status));
    }
    let bytes = resp.bytes().map_err(|e| ScrapeError::Body(e.to_string()))?;
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ScrapeError::TooLarge(bytes.len()));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| ScrapeError::NotUtf8)?;
    prom::parse(text).map_err(|e| ScrapeError::Parse(e.to_string()))
}

/// A running scraper. Dropping it without [`Scraper::finish`] stops the thread without a final scrape.
pub struct Scraper {
    latest: LatestGauges,
    stop: Option<mpsc::Sender<()>>,
    baseline: mpsc::Receiver<()>,
    result: mpsc::Receiver<Vec<EndpointLog>>,
    thread: Option<JoinHandle<()>>,
}

impl Scraper {
    /// Starts the thread; it takes the baseline scrape at once.
    pub fn start(urls: Vec<Url>, interval: Duration) -> std::io::Result<Scraper> {
        let (stop_tx, stop_rx) = mpsc::channel();
        let (baseline_tx, baseline_rx) = mpsc::channel();
        let (result_tx, result_rx) = mpsc::channel();
        let latest = LatestGauges::default();
        let publish = latest.clone();
        let thread = std::thread::Builder::new()
            .name("llmperf-scrape".into())
            .spawn(move || {
                let logs = run(urls, interval, stop_rx, baseline_tx, &publish);
                let _ = result_tx.send(logs);
            })?;
        Ok(Scraper {
            latest,
            stop: Some(stop_tx),
            baseline: baseline_rx,
            result: result_rx,
            thread: Some(thread),
        })
    }

    /// The latest values of the known gauges, updated after every good scrape.
    pub fn latest(&self) -> LatestGauges {
        self.latest.clone()
    }

    /// Waits up to `max` for the baseline scrape; `false` when it did not end in time.
    pub fn wait_baseline(&self, max: Duration) -> bool {
        self.baseline.recv_timeout(max).is_ok()
    }

    /// Tells the thread the run has ended and waits up to `max` for its final scrape and logs.
    pub fn finish(mut self, max: Duration) -> Option<Vec<EndpointLog>> {
        drop(self.stop.take());
        let logs = self.result.recv_timeout(max).ok();
        if logs.is_some() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        logs
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        // Stops the thread; it is not joined (a scrape in progress ends by its own timeout).
        drop(self.stop.take());
    }
}

/// The thread: baseline, periodic scrapes until told to stop, final scrape.
fn run(
    urls: Vec<Url>,
    interval: Duration,
    stop: mpsc::Receiver<()>,
    baseline: mpsc::Sender<()>,
    latest: &LatestGauges,
) -> Vec<EndpointLog> {
    let mut logs: Vec<EndpointLog> = urls.into_iter().map(EndpointLog::new).collect();
    let client = match reqwest::blocking::Client::builder()
        .timeout(SCRAPE_TIMEOUT)
        .connect_timeout(SCRAPE_TIMEOUT)
        .pool_max_idle_per_host(1)
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            for log in &mut logs {
                log.failures += 1;
                log.last_error = Some(format!("cannot build an HTTP client: {e}"));
            }
            let _ = baseline.send(());
            return logs;
        }
    };
    for log in &mut logs {
        log.baseline_ok = log.scrape(&client, SCRAPE_TIMEOUT);
    }
    publish_latest(&logs, latest);
    let _ = baseline.send(());
    // A periodic scrape gives up after about an interval, so a slow endpoint never delays the final one.
    let periodic_timeout = interval.clamp(PERIODIC_TIMEOUT_MIN, SCRAPE_TIMEOUT);
    let mut next = Instant::now() + interval;
    while let Err(mpsc::RecvTimeoutError::Timeout) =
        stop.recv_timeout(next.saturating_duration_since(Instant::now()))
    {
        for log in &mut logs {
            log.scrape(&client, periodic_timeout);
        }
        publish_latest(&logs, latest);
        next += interval;
        let now = Instant::now();
        if next < now {
            // Scrapes took longer than the interval: skip the missed ticks.
            next = now + interval;
        }
    }
    for log in &mut logs {
        log.final_ok = log.scrape(&client, SCRAPE_TIMEOUT);
    }
    publish_latest(&logs, latest);
    logs
}

/// Replaces the latest known gauges with those of each endpoint's last good scrape (summed when several
/// endpoints expose the same one).
fn publish_latest(logs: &[EndpointLog], latest: &LatestGauges) {
    let mut values: Vec<(&'static str, f64)> = Vec::new();
    for (_, exposition) in logs.iter().filter_map(|l| l.last.as_ref()) {
        for (name, v) in known_gauges(exposition) {
            match values.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += v,
                None => values.push((name, v)),
            }
        }
    }
    *latest
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = values;
}
