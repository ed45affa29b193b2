//! Server control (issue 27): the serving engine's own endpoints that a benchmark calls around its load —
//! resetting the prefix cache ([`reset`]) and starting and stopping the profiler ([`profile`]) — and what
//! each run records about them ([`outcome`]). The engine is named with `--server-kind` or detected from
//! `GET /v1/models` ([`kind`]). The runner decides when; this module only calls and records.
//!
//! Every call goes to the endpoint's origin (scheme, host and port of `--url`), carries the run's headers
//! (an API key included; never logged), and has [`CALL_TIMEOUT`]. A failure is a [`ControlError`] that
//! names the endpoint and the server's answer.

pub mod kind;
pub mod outcome;
pub mod profile;
pub mod reset;

use std::time::Duration;

use reqwest::Url;

pub use crate::cli::server_control::{ResetWhen, ServerKind};
pub use outcome::{ProfileWindow, ResetRecord, RunControl};

/// How long one control call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the server-control flags decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerControlPlan {
    /// `--reset-prefix-cache`.
    pub reset: ResetWhen,
    /// `--server-kind` (`None`: detected).
    pub kind: Option<ServerKind>,
    /// `--server-control-best-effort`.
    pub best_effort: bool,
    /// `--server-profile` and its window.
    pub profile: Option<ProfilePlan>,
    /// `--target-cache-hit-rate`.
    pub target_hit_rate: Option<f64>,
}

impl ServerControlPlan {
    /// Whether run `index` of the sweep resets the cache (`each_run`: SLA probes count as runs).
    pub fn resets_before(&self, index: usize) -> bool {
        match self.reset {
            ResetWhen::Never => false,
            ResetWhen::Once => index == 0,
            ResetWhen::EachRun => true,
        }
    }

    /// Whether anything is called on the server.
    pub fn calls_server(&self) -> bool {
        self.reset != ResetWhen::Never || self.profile.is_some()
    }
}

/// `--server-profile`: when the profiler runs within each run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProfilePlan {
    /// `--server-profile-at-inflight`: start once this many requests are in flight (`None`: at the first
    /// measured request).
    pub at_inflight: Option<usize>,
    /// `--server-profile-seconds`: stop after this long (`None`: at the run's end).
    pub seconds: Option<f64>,
}

/// A control call that failed: the endpoint, and the server's answer (or why none came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlError {
    /// `POST http://host:port/path`.
    pub endpoint: String,
    /// `HTTP 404: body…`, or the transport error.
    pub answer: String,
    /// What the server needs for this endpoint, if known.
    pub advice: Option<&'static str>,
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.endpoint, self.answer)?;
        if let Some(a) = self.advice {
            write!(f, " ({a})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ControlError {}

/// The server's control endpoints: an HTTP client, the origin of `--url`, the run's headers and the
/// engine, once known.
#[derive(Debug, Clone)]
pub struct Controller {
    http: reqwest::Client,
    origin: Url,
    headers: Vec<(String, String)>,
    kind: Option<ServerKind>,
}

impl Controller {
    /// A controller for the server behind `url`; `kind` from `--server-kind`, else detected on first use.
    pub fn new(url: &Url, headers: &[(String, String)], kind: Option<ServerKind>) -> Controller {
        let mut origin = url.clone();
        origin.set_path("/");
        origin.set_query(None);
        Controller {
            http: reqwest::Client::builder()
                .timeout(CALL_TIMEOUT)
                .build()
                .unwrap_or_default(),
            origin,
            headers: headers.to_vec(),
            kind,
        }
    }

    /// The engine: `--server-kind`, else detected (and remembered).
    pub async fn kind(&mut self) -> Result<ServerKind, ControlError> {
        if let Some(k) = self.kind {
            return Ok(k);
        }
        let k = kind::detect(self).await?;
        tracing::info!(
            "Server control: the server is {} (from /v1/models; --server-kind sets it)",
            k.name()
        );
        self.kind = Some(k);
        Ok(k)
    }

    /// `origin` + `path`.
    fn url(&self, path: &str) -> Url {
        self.origin
            .join(path)
            .unwrap_or_else(|_| self.origin.clone())
    }

    /// Sends `method path` with the run's headers; the status and the body.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
    ) -> Result<(u16, String), ControlError> {
        let url = self.url(path);
        let endpoint = format!("{method} {url}");
        let mut req = self.http.request(method, url);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req.send().await.map_err(|e| ControlError {
            endpoint: endpoint.clone(),
            answer: format!("no answer: {e}"),
            advice: None,
        })?;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        Ok((status, body))
    }

    /// `POST path`, an error unless the server answers 2xx.
    async fn post_ok(&self, path: &str, advice: Option<&'static str>) -> Result<(), ControlError> {
        let (status, body) = self.call(reqwest::Method::POST, path).await?;
        if (200..300).contains(&status) {
            return Ok(());
        }
        Err(ControlError {
            endpoint: format!("POST {}", self.url(path)),
            answer: format!("HTTP {status}: {}", short(&body)),
            advice,
        })
    }
}

/// A server's answer, trimmed to one short line for a message.
pub(crate) fn short(body: &str) -> String {
    let line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}
