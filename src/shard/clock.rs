//! Clocks of a sharded run: the host name, how far this machine's wall clock may be from true time
//! (`chronyc tracking`, else the kernel's `adjtimex` estimate), the wall-clock instant a shard really
//! started, and the offset that turns its monotonic timestamps into wall-clock epoch seconds for `merge`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::shutdown::Shutdown;

/// How long `chronyc tracking` may take before it is abandoned.
const CHRONYC_TIMEOUT: Duration = Duration::from_secs(2);

/// This machine's name and clock quality, probed once per run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockInfo {
    /// Host name.
    pub host: String,
    /// Where the estimate came from: `chronyc`, `adjtimex`, or `none`.
    pub source: &'static str,
    /// Wall clock minus true time, seconds (chronyc: positive when the clock is fast).
    pub offset_s: Option<f64>,
    /// The kernel's estimated error bound of the wall clock, seconds (adjtimex `esterror`).
    pub est_error_s: Option<f64>,
    /// The kernel's maximum error of the wall clock, seconds (adjtimex `maxerror`).
    pub max_error_s: Option<f64>,
    /// Whether the kernel considers the clock synchronised (adjtimex state not `TIME_ERROR`).
    pub synchronized: Option<bool>,
}

impl ClockInfo {
    /// Probes the host name and clock estimates; never fails (unknown values stay `None`).
    pub fn probe() -> ClockInfo {
        let mut info = ClockInfo {
            host: host_name(),
            source: "none",
            ..ClockInfo::default()
        };
        if let Some((est, max, synced)) = crate::sys::clock_estimates() {
            info.source = "adjtimex";
            info.est_error_s = Some(est);
            info.max_error_s = Some(max);
            info.synchronized = Some(synced);
        }
        if let Some(offset) = chronyc_offset_s() {
            info.source = "chronyc";
            info.offset_s = Some(offset);
        }
        info
    }

    /// The `clock` object of the shard record.
    pub fn to_json(&self) -> Value {
        json!({
            "source": self.source,
            "offset_s": self.offset_s,
            "est_error_s": self.est_error_s,
            "max_error_s": self.max_error_s,
            "synchronized": self.synchronized,
        })
    }
}

/// When a shard's measured schedule really started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartInfo {
    /// Wall-clock epoch seconds of the start.
    pub started_epoch_s: f64,
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC`, seconds: added to a stored timestamp it gives epoch seconds.
    pub wall_minus_monotonic_s: f64,
    /// How late the start was against `--start-at` (0 without it, or when on time).
    pub late_s: f64,
}

impl StartInfo {
    /// The start as RFC 3339 with microseconds.
    pub fn started_at_rfc3339(&self) -> String {
        let micros = (self.started_epoch_s * 1e6).round() as i64;
        chrono::DateTime::from_timestamp_micros(micros)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
            .unwrap_or_default()
    }

    /// The start info for a schedule that begins at `at` (an instant of this process).
    pub fn at(at: Instant, start_at: Option<chrono::DateTime<chrono::Utc>>) -> StartInfo {
        let wall_minus_monotonic_s = wall_minus_monotonic_s();
        let started_epoch_s = crate::clock::secs(at) + wall_minus_monotonic_s;
        let late_s = start_at.map_or(0.0, |t| (started_epoch_s - epoch_s(t)).max(0.0));
        StartInfo {
            started_epoch_s,
            wall_minus_monotonic_s,
            late_s,
        }
    }
}

/// Epoch seconds of a UTC instant.
pub fn epoch_s(t: chrono::DateTime<chrono::Utc>) -> f64 {
    t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9
}

/// `CLOCK_REALTIME − CLOCK_MONOTONIC` in seconds, from the tightest of a few back-to-back reads.
pub fn wall_minus_monotonic_s() -> f64 {
    let mut best = (f64::INFINITY, 0.0);
    for _ in 0..5 {
        let m0 = crate::sys::monotonic_s();
        let w = crate::sys::realtime_s();
        let m1 = crate::sys::monotonic_s();
        if m1 - m0 < best.0 {
            best = (m1 - m0, w - (m0 + m1) / 2.0);
        }
    }
    best.1
}

/// The process-local instant of wall-clock time `t`, and how far in the past it is (seconds, 0 if ahead).
pub fn instant_of(t: chrono::DateTime<chrono::Utc>) -> (Instant, f64) {
    let now = Instant::now();
    let ahead_s = epoch_s(t) - (crate::clock::secs(now) + wall_minus_monotonic_s());
    if ahead_s >= 0.0 {
        (now + Duration::from_secs_f64(ahead_s), 0.0)
    } else {
        (now, -ahead_s)
    }
}

/// Sleeps until `at`, or until a stop signal.
pub async fn sleep_until(at: Instant, shutdown: &Shutdown) {
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => {}
        _ = shutdown.stopped() => {}
    }
}

/// The host name (`gethostname`), or `$HOSTNAME`, or `unknown`.
pub fn host_name() -> String {
    let from_proc = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    from_proc
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// `chronyc tracking`'s "System time: X seconds fast|slow of NTP time", as + fast / − slow.
fn chronyc_offset_s() -> Option<f64> {
    let mut child = Command::new("chronyc")
        .arg("tracking")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + CHRONYC_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    parse_chronyc(&text)
}

/// Parses the `System time` line of `chronyc tracking`.
pub fn parse_chronyc(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("System time"))?;
    let rest = line.split_once(':')?.1;
    let mut words = rest.split_whitespace();
    let value: f64 = words.next()?.parse().ok()?;
    let _seconds = words.next()?;
    match words.next()? {
        "fast" => Some(value),
        "slow" => Some(-value),
        _ => None,
    }
}
