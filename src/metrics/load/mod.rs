//! The load a run delivered against the load it was configured with, and the verdict on it
//! (docs/load-verdict.md): `Achieved Rate (req/s)` over the send window (first to last send), its error
//! against `--rate`, `Delivered Concurrency` (time-weighted mean in flight over the send window),
//! `Max In Flight`, and `Load As Configured` (true / false / null where no rule applies) with the
//! tolerance, the rule applied and, when false, the reason in words. Computed from the run's stored rows
//! (its database), so a merged run's verdict comes from the union of its shards' rows.

mod db;
mod facts;
mod plateau;
mod rows;
mod rules;
mod sweep;
mod window;

pub use facts::{LoadFacts, Wanted};
pub use plateau::{plateau, Plateau};
pub use rows::{read_rows, LoadRow, RowMetrics};
use rules::full_level;
pub use rules::{LoadRule, PlateauRule, PLATEAU_LEVEL};

use serde::Serialize;

/// How far (percent) the delivered load may fall short of the configured one and still be "as configured".
pub const LOAD_TOLERANCE_PCT: f64 = 5.0;

/// The delivered load of one run and its verdict; serialised as its summary keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadVerdict {
    /// Sends over the send window: (n − 1) / (last send − first send); absent with fewer than 2 sends.
    #[serde(
        rename = "Achieved Rate (req/s)",
        skip_serializing_if = "Option::is_none"
    )]
    pub achieved_rate: Option<f64>,
    /// (achieved / `--rate` − 1) × 100, where a rate was configured.
    #[serde(rename = "Rate Error (%)", skip_serializing_if = "Option::is_none")]
    pub rate_error_pct: Option<f64>,
    /// Closed loop: the time-weighted mean of requests (conversations) in flight over the send window.
    #[serde(
        rename = "Delivered Concurrency",
        skip_serializing_if = "Option::is_none"
    )]
    pub delivered_concurrency: Option<f64>,
    /// The most requests (conversations) in flight at once.
    #[serde(rename = "Max In Flight")]
    pub max_in_flight: i64,
    /// `true` / `false`, `null` where no rule applies.
    #[serde(rename = "Load As Configured")]
    pub as_configured: Option<bool>,
    /// [`LOAD_TOLERANCE_PCT`].
    #[serde(rename = "Load Tolerance (%)")]
    pub tolerance_pct: f64,
    /// The rule applied (or why none), in words.
    #[serde(rename = "Load Rule")]
    pub rule: String,
    /// Why the load was not as configured, in words (only when false).
    #[serde(
        rename = "Load Verdict Reason",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<String>,
    /// Seconds from the first send (warmup included) until the load reached the configured level: closed
    /// loop, the first time in flight ≥ 95 % of `--parallel` (of `--number` when fewer); a rate (open
    /// loop, paced closed loop), the end of `--ramp-up` or 0; `null` where no rule applies or the level
    /// was never reached.
    #[serde(rename = "Load Reached After (s)")]
    pub reached_after_s: Option<f64>,
}

impl LoadVerdict {
    /// The WARN line of a run whose load was not as configured, without a level label (the log line's
    /// level says it; the report's `! Run …: WARNING: …` line adds it).
    pub fn warning(&self) -> Option<String> {
        let reason = self
            .reason
            .as_ref()
            .filter(|_| self.as_configured == Some(false))?;
        Some(format!(
            "the load was not as configured ({reason}); the results describe the load delivered, \
             not the one asked for. See docs/load-verdict.md."
        ))
    }
}

fn round(x: f64, digits: u32) -> f64 {
    crate::pyjson::round(x, digits)
}

/// What the verdict is computed from besides the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadInputs {
    /// The rule.
    pub rule: LoadRule,
    /// Why the client's self-diagnostics say it limited the run (empty when it did not).
    pub client_limits: Vec<String>,
    /// Warmup requests' `(send, end)` times (not stored): they share the cap with the measured requests,
    /// so they count in flight (never as sends).
    pub warmup_spans: Vec<(f64, f64)>,
}

/// The verdict over a run's stored rows in memory: the reference for [`judge_db`].
pub fn judge(rows: &[LoadRow], inputs: &LoadInputs) -> LoadVerdict {
    let wanted = Wanted::of(&inputs.rule, &PlateauRule::Unmeasured(""));
    judge_facts(
        &LoadFacts::of_rows(rows, &inputs.warmup_spans, &wanted),
        inputs,
    )
}

/// The verdict and the plateau of the run whose database is `conn`, streamed out of it (memory does not
/// grow with the run's rows; [`db`]).
pub fn judge_db(
    conn: &rusqlite::Connection,
    inputs: &LoadInputs,
    plateau_rule: &PlateauRule,
) -> rusqlite::Result<(LoadVerdict, Plateau)> {
    let wanted = Wanted::of(&inputs.rule, plateau_rule);
    let facts = db::facts(conn, &inputs.warmup_spans, &wanted)?;
    let plateau = plateau::plateau_of(&facts, plateau_rule, |w| db::plateau_window(conn, w))?;
    Ok((judge_facts(&facts, inputs), plateau))
}

/// The verdict over what a run's rows showed.
pub fn judge_facts(facts: &LoadFacts, inputs: &LoadInputs) -> LoadVerdict {
    let tol = LOAD_TOLERANCE_PCT / 100.0;
    let (first, last) = facts.send_window();
    let window = last - first;
    let n = facts.n;
    let achieved = (n >= 2 && window > 0.0).then(|| (n - 1) as f64 / window);
    let conversations = matches!(
        inputs.rule,
        LoadRule::Closed {
            conversations: true,
            ..
        }
    );
    let in_flight = facts.in_flight(conversations);
    let max_in_flight = in_flight.max;
    let closed = matches!(
        inputs.rule,
        LoadRule::Closed { .. } | LoadRule::Paced { .. }
    );
    let delivered = closed.then_some(in_flight.mean).flatten();
    let configured_rate = match inputs.rule {
        LoadRule::Paced { rate, .. } | LoadRule::Open { rate, .. } => Some(rate),
        _ => None,
    };
    let mut v = LoadVerdict {
        achieved_rate: achieved.map(|a| round(a, 4)),
        rate_error_pct: configured_rate
            .zip(achieved)
            .map(|(rate, a)| round((a / rate - 1.0) * 100.0, 2)),
        delivered_concurrency: delivered.map(|d| round(d, 4)),
        max_in_flight,
        as_configured: None,
        tolerance_pct: LOAD_TOLERANCE_PCT,
        rule: String::new(),
        reason: None,
        reached_after_s: reached_after(&inputs.rule, in_flight).map(|s| round(s, 4)),
    };
    if n == 0 {
        v.rule = "no request was sent: no rule applies".into();
        return v;
    }
    let (unreachable, dropped) = (facts.unreachable, facts.dropped);
    let (rule, shortfall) = apply(facts, inputs, max_in_flight, delivered, window, tol);
    v.rule = rule;
    let client = (!inputs.client_limits.is_empty())
        .then(|| format!("client-limited: {}", inputs.client_limits.join("; ")));
    v.as_configured = shortfall.as_ref().map(|s| s.is_none());
    if unreachable + dropped > 0 {
        v.as_configured = Some(false);
        v.reason = Some(refused_reason(unreachable, dropped, n));
    } else if let Some(Some(short)) = shortfall {
        v.reason = Some(match client {
            Some(c) => format!("{short}; {c}"),
            None => short,
        });
    }
    v
}

/// The reason of a run in which the server refused connections: `unreachable` requests could not
/// connect, `dropped` had their connection reset or closed before any response byte. The second are
/// `reset` / `disconnect` failures without a status: the client retries a reused connection that fails
/// before answering on a new one, so such a failure is always on a connection opened for the request,
/// which the server accepted and dropped unanswered (a connection limit, an accept-queue overflow, a proxy
/// in front of it).
fn refused_reason(unreachable: usize, dropped: usize, n: usize) -> String {
    let mut parts = Vec::new();
    if unreachable > 0 {
        parts.push(format!("{unreachable} of {n} requests could not connect"));
    }
    if dropped > 0 {
        parts.push(format!(
            "{dropped} of {n} requests had their connection reset or closed before any response byte"
        ));
    }
    format!("server refused connections: {}", parts.join(", "))
}

/// The rule in words and its outcome: `None` where it does not apply, `Some(None)` when the load held,
/// `Some(Some(why))` when it fell short.
fn apply(
    facts: &LoadFacts,
    inputs: &LoadInputs,
    max_in_flight: i64,
    delivered: Option<f64>,
    window_s: f64,
    tol: f64,
) -> (String, Option<Option<String>>) {
    let pct = LOAD_TOLERANCE_PCT;
    match inputs.rule {
        LoadRule::Closed {
            parallel, number, ..
        } if number <= parallel => (
            format!(
                "closed loop with --number {number} ≤ --parallel {parallel}: all {number} requests in \
                 flight at once"
            ),
            Some((max_in_flight < number as i64).then(|| {
                format!(
                    "client-limited: at most {max_in_flight} of the {number} requests were in flight at once"
                )
            })),
        ),
        LoadRule::Closed {
            parallel,
            conversations,
            ..
        } => {
            let floor = parallel as f64 * (1.0 - tol);
            let counted = if conversations {
                " (conversations in flight)"
            } else {
                ""
            };
            let rule = format!(
                "closed loop: Delivered Concurrency{counted} ≥ {}% of --parallel {parallel}",
                100.0 - pct
            );
            let Some(d) = delivered else {
                return (rule, Some(None));
            };
            let short = (d < floor).then(|| {
                let mut why = format!(
                    "client-limited: {d:.2} requests in flight on average over the {window_s:.2} s send \
                     window against --parallel {parallel}"
                );
                if let Some(ramp) = ramp_s(&facts.requests, parallel).filter(|r| *r > tol * window_s) {
                    why.push_str(&format!("; ramp-up took {ramp:.2} s"));
                }
                why
            });
            (rule, Some(short))
        }
        LoadRule::Paced { parallel, .. } => {
            let rule = format!(
                "paced closed loop: sends keep their intended times (the drawn schedule, or later when all \
                 --parallel {parallel} slots were busy; achieved rate ≥ {}% of the intended times' rate)",
                100.0 - pct
            );
            (rule, schedule_shortfall(facts, window_s, tol))
        }
        LoadRule::Open { .. } | LoadRule::Trace => {
            let what = if inputs.rule == LoadRule::Trace {
                "trace replay: sends keep the trace's arrival times"
            } else {
                "paced: sends keep the drawn arrival schedule"
            };
            let rule = format!("{what} (achieved rate ≥ {}% of the schedule's)", 100.0 - pct);
            (rule, schedule_shortfall(facts, window_s, tol))
        }
        LoadRule::Unjudged(why) => (format!("no rule applies: {why}"), None),
    }
}

/// The send window against the schedule's: `None` without scheduled times.
fn schedule_shortfall(facts: &LoadFacts, window_s: f64, tol: f64) -> Option<Option<String>> {
    let (count, lo, hi) = facts.scheduled;
    if count < 2 || window_s <= 0.0 {
        return (count == facts.n).then_some(None);
    }
    let n = (facts.n - 1) as f64;
    let (schedule_rate, achieved) = (n / (hi - lo).max(f64::MIN_POSITIVE), n / window_s);
    Some((achieved < schedule_rate * (1.0 - tol)).then(|| {
        format!(
            "arrival process fell behind: sent {achieved:.2} req/s against a schedule of {schedule_rate:.2} \
             req/s"
        )
    }))
}

/// `Load Reached After (s)` over the in-flight figures (warmup included): see [`LoadVerdict`].
fn reached_after(rule: &LoadRule, in_flight: &sweep::InFlight) -> Option<f64> {
    match *rule {
        LoadRule::Closed {
            parallel, number, ..
        } => {
            let first = in_flight.first_s?;
            let (start, _) = in_flight.span_at(full_level(parallel.min(number)))?;
            Some(start - first)
        }
        LoadRule::Open { ramp_up_s, .. } | LoadRule::Paced { ramp_up_s, .. } => {
            Some(ramp_up_s.unwrap_or(0.0))
        }
        LoadRule::Trace | LoadRule::Unjudged(_) => None,
    }
}

/// Closed loop: seconds from the first send until `parallel` requests were first in flight (95 %).
fn ramp_s(requests: &sweep::InFlight, parallel: u64) -> Option<f64> {
    let first = requests.first_s?;
    let (start, _) = requests.span_at(full_level(parallel))?;
    Some(start - first)
}

#[cfg(test)]
mod tests;
