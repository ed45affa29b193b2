//! The connection test sent before each run (spec §6.3): success → go; HTTP 4xx → abort with the server's
//! message; anything else → retry every 10 s until `--total-timeout` has passed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::HttpClient;
use crate::record::{FailureKind, RequestRecord};
use crate::shutdown::Shutdown;

/// Pause between connection-test attempts.
pub const RETRY_EVERY: Duration = Duration::from_secs(10);

/// Sends `body` until it succeeds, a 4xx comes back, `budget` runs out or the run is interrupted.
pub async fn check(
    client: &HttpClient,
    body: Arc<str>,
    budget: Duration,
    shutdown: &Shutdown,
) -> Result<()> {
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let record = RequestRecord::new(0, true, body.clone(), Instant::now());
        let record = client.send(record).await;
        if record.success {
            tracing::info!("Test connection successful.");
            return Ok(());
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
        tracing::warn!(
            "Test connection failed (attempt {attempt}): {why}; retrying in {} s",
            RETRY_EVERY.as_secs()
        );
        tokio::select! {
            _ = tokio::time::sleep(RETRY_EVERY) => {}
            _ = shutdown.stopped() => bail!("interrupted during the connection test"),
        }
    }
}
