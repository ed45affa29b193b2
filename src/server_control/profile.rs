//! The server's profiler: `POST /start_profile` and `POST /stop_profile` (vLLM, SGLang), and the window of
//! one run — from its first measured request, or from the moment `--server-profile-at-inflight N` requests
//! are in flight, until `--server-profile-seconds` have passed or the run has ended.

use std::time::Duration;

use tokio::sync::oneshot;

use super::kind::profile_advice;
use super::outcome::ProfileWindow;
use super::{ControlError, Controller, ProfilePlan, ServerKind};
use crate::clock;

/// How often the in-flight count is read while waiting for the threshold.
const POLL: Duration = Duration::from_millis(1);

async fn call(c: &mut Controller, path: &str) -> Result<f64, ControlError> {
    let kind = c.kind().await?;
    if kind == ServerKind::LlamaCpp {
        return Err(ControlError {
            endpoint: format!("POST {}", c.url(path)),
            answer: "not called".to_string(),
            advice: Some(profile_advice(kind)),
        });
    }
    c.post_ok(path, Some(profile_advice(kind))).await?;
    Ok(clock::now_s())
}

/// Runs one window: waits for the threshold (`in_flight` reads the client's count), starts, waits for the
/// time or `ended`, stops. Started after the run's first measured request is due; `ended` fires when the
/// run's last request has finished. A failed call ends the window with the error (a stop is still tried
/// after a start that succeeded).
pub async fn window(
    c: &mut Controller,
    plan: ProfilePlan,
    in_flight: impl Fn() -> usize,
    mut ended: oneshot::Receiver<()>,
) -> (ProfileWindow, Option<ControlError>) {
    let mut w = ProfileWindow::default();
    if let Some(n) = plan.at_inflight {
        loop {
            if in_flight() >= n {
                break;
            }
            if !matches!(ended.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
                w.note = Some(format!("never {n} requests in flight: not started"));
                return (w, None);
            }
            tokio::time::sleep(POLL).await;
        }
    }
    let count = in_flight();
    match call(c, "start_profile").await {
        Ok(t) => {
            w.start_s = Some(t);
            w.in_flight_at_start = Some(count);
            tracing::info!("Server profiler started ({count} request(s) in flight)");
        }
        Err(e) => return (w, Some(e)),
    }
    match plan.seconds {
        Some(s) => {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(s)) => {}
                _ = &mut ended => w.note = Some("the run ended first".to_string()),
            }
        }
        None => {
            let _ = (&mut ended).await;
        }
    }
    match call(c, "stop_profile").await {
        Ok(t) => {
            w.stop_s = Some(t);
            tracing::info!("Server profiler stopped");
            (w, None)
        }
        Err(e) => (w, Some(e)),
    }
}
