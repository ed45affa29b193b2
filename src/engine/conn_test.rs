//! The connection test sent before each run (spec §6.3): success → go; HTTP 4xx → abort with the server's
//! message; anything else → retry every 10 s until `--total-timeout` has passed. A signal ends it at once,
//! whatever it was waiting for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::HttpClient;
use crate::record::{FailureKind, RequestRecord};
use crate::shutdown::Shutdown;

/// Pause between connection-test attempts.
pub const RETRY_EVERY: Duration = Duration::from_secs(10);

/// How the connection test ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// The server answered a test request.
    Passed,
    /// A signal arrived first.
    Interrupted,
}

/// What the first retry says: how often, for how long and bounded by which flag, and how to stop.
fn retry_plan(budget: Duration) -> String {
    let every = RETRY_EVERY.as_secs();
    if budget >= crate::plan::NO_TIMEOUT {
        return format!(
            "retrying every {every} s with no time limit (--total-timeout 0); press Ctrl-C to stop"
        );
    }
    format!(
        "retrying every {every} s for up to {} (--total-timeout {} s bounds it); press Ctrl-C to stop",
        human_duration(budget),
        budget.as_secs()
    )
}

/// `6 h`, `1 h 30 min`, `2 min`, `45 s`.
fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, sec) = (s / 3600, s % 3600 / 60, s % 60);
    match (h, m, sec) {
        (0, 0, sec) => format!("{sec} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, sec) => format!("{m} min {sec} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// Sends `body` until it succeeds, a 4xx comes back, `budget` runs out or the run is interrupted.
pub async fn check(
    client: &HttpClient,
    body: Arc<str>,
    budget: Duration,
    shutdown: &Shutdown,
) -> Result<Checked> {
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let record = RequestRecord::new(0, true, body.clone(), Instant::now());
        let record = tokio::select! {
            biased;
            _ = shutdown.stopped() => return Ok(Checked::Interrupted),
            record = client.send(record) => record,
        };
        if record.success {
            tracing::info!("Test connection successful.");
            return Ok(Checked::Passed);
        }
        let why = record
            .error
            .clone()
            .unwrap_or_else(|| "unknown error".into());
        let client_error = record.failure == Some(FailureKind::HttpStatus)
            && record.status_code.is_some_and(|s| (400..500).contains(&s));
        let unusable = matches!(
            record.failure,
            Some(FailureKind::BadResponse | FailureKind::Malformed)
        );
        if client_error || unusable {
            bail!(
                "Test connection failed: {} answered {why}. Check --url, --model, --api-key and --headers (or skip the test with --no-test-connection).",
                client.url()
            );
        }
        if started.elapsed() + RETRY_EVERY > budget {
            bail!(
                "Test connection failed after {attempt} attempt(s) over {:.0} s (--total-timeout): {why}",
                started.elapsed().as_secs_f64()
            );
        }
        if attempt == 1 {
            tracing::warn!("Test connection failed: {why}; {}", retry_plan(budget));
        } else {
            tracing::warn!(
                "Test connection failed (attempt {attempt}): {why}; retrying in {} s",
                RETRY_EVERY.as_secs()
            );
        }
        tokio::select! {
            biased;
            _ = shutdown.stopped() => return Ok(Checked::Interrupted),
            _ = tokio::time::sleep(RETRY_EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_plan_names_the_bound_its_flag_and_ctrl_c() {
        assert_eq!(
            retry_plan(Duration::from_secs(21_600)),
            "retrying every 10 s for up to 6 h (--total-timeout 21600 s bounds it); press Ctrl-C to stop"
        );
        assert_eq!(
            retry_plan(crate::plan::NO_TIMEOUT),
            "retrying every 10 s with no time limit (--total-timeout 0); press Ctrl-C to stop"
        );
        assert_eq!(human_duration(Duration::from_secs(5_400)), "1 h 30 min");
        assert_eq!(human_duration(Duration::from_secs(90)), "1 min 30 s");
        assert_eq!(human_duration(Duration::from_secs(45)), "45 s");
    }
}
