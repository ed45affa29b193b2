//! The load a run delivered against the load it was configured with, and the verdict on it
//! (docs/load-verdict.md): `Achieved Rate (req/s)` over the send window (first to last send), its error
//! against `--rate`, `Delivered Concurrency` (time-weighted mean in flight over the send window),
//! `Max In Flight`, and `Load As Configured` (true / false / null where no rule applies) with the
//! tolerance, the rule applied and, when false, the reason in words. Computed from the run's stored rows
//! (its database), so a merged run's verdict comes from the union of its shards' rows.

mod plateau;
mod rows;
mod window;

pub use plateau::{plateau, Plateau, PlateauRule};
pub use rows::{read_rows, LoadRow, RowMetrics};

use serde::Serialize;

/// How far (percent) the delivered load may fall short of the configured one and still be "as configured".
pub const LOAD_TOLERANCE_PCT: f64 = 5.0;

/// The rule a run's load is judged by, from how it releases its requests.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadRule {
    /// Closed loop: `parallel` requests (`conversations`: conversations of a multi-turn run) kept in flight,
    /// `number` measured requests in all (or conversations' requests).
    Closed {
        /// `--parallel`.
        parallel: u64,
        /// `--number` (measured requests of the run).
        number: u64,
        /// Count conversations in flight (multi-turn: think time between turns is part of a conversation).
        conversations: bool,
    },
    /// Closed loop paced by `--rate`: the rate is the rule while the cap never binds.
    Paced {
        /// `--parallel`.
        parallel: u64,
        /// `--rate`.
        rate: f64,
        /// `--ramp-up` (seconds), if any.
        ramp_up_s: Option<f64>,
    },
    /// Open loop at `--rate` (Poisson or `--arrival`, `--ramp-up` included): the send times against the
    /// drawn schedule.
    Open {
        /// `--rate`.
        rate: f64,
        /// `--ramp-up` (seconds), if any.
        ramp_up_s: Option<f64>,
    },
    /// A trace's own arrival times: the send times against the trace's.
    Trace,
    /// No rule applies (the reason, in words).
    Unjudged(&'static str),
}

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

/// The verdict over a run's stored rows.
pub fn judge(rows: &[LoadRow], inputs: &LoadInputs) -> LoadVerdict {
    let tol = LOAD_TOLERANCE_PCT / 100.0;
    let first = rows.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min);
    let last = rows
        .iter()
        .map(|r| r.start_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let window = last - first;
    let n = rows.len();
    let achieved = (n >= 2 && window > 0.0).then(|| (n - 1) as f64 / window);
    let conversations = matches!(
        inputs.rule,
        LoadRule::Closed {
            conversations: true,
            ..
        }
    );
    let mut in_flight = spans(rows, conversations);
    in_flight.extend_from_slice(&inputs.warmup_spans);
    let steps = window::steps(&in_flight);
    let max_in_flight = window::max_in_flight(&steps);
    let closed = matches!(
        inputs.rule,
        LoadRule::Closed { .. } | LoadRule::Paced { .. }
    );
    let delivered = closed
        .then(|| window::mean_over(&steps, first, last))
        .flatten();
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
        reached_after_s: reached_after(&inputs.rule, &steps).map(|s| round(s, 4)),
    };
    if n == 0 {
        v.rule = "no request was sent: no rule applies".into();
        return v;
    }
    let (unreachable, dropped) = refusals(rows);
    let (rule, shortfall) = apply(rows, inputs, max_in_flight, delivered, window, tol);
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

/// Requests the server refused: `(could not connect, reset or closed before any response byte)`. The
/// second are `reset` / `disconnect` failures without a status: the client retries a reused connection
/// that fails before answering on a new one, so such a failure is always on a connection opened for the
/// request, which the server accepted and dropped unanswered (a connection limit, an accept-queue
/// overflow, a proxy in front of it).
fn refusals(rows: &[LoadRow]) -> (usize, usize) {
    let unreachable = rows
        .iter()
        .filter(|r| r.failure_kind.as_deref() == Some("connect"))
        .count();
    let dropped = rows
        .iter()
        .filter(|r| {
            r.status.is_none() && matches!(r.failure_kind.as_deref(), Some("reset" | "disconnect"))
        })
        .count();
    (unreachable, dropped)
}

/// The reason of a run in which the server refused connections.
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

/// Each request's (or, `conversations`, each conversation's) time in flight.
fn spans(rows: &[LoadRow], conversations: bool) -> Vec<window::Span> {
    if !conversations {
        return rows.iter().map(|r| (r.start_s, r.end_s)).collect();
    }
    let mut by_id: std::collections::BTreeMap<i64, window::Span> = Default::default();
    let mut single = Vec::new();
    for r in rows {
        match r.conversation {
            Some(id) => {
                let e = by_id.entry(id).or_insert((r.start_s, r.end_s));
                e.0 = e.0.min(r.start_s);
                e.1 = e.1.max(r.end_s);
            }
            None => single.push((r.start_s, r.end_s)),
        }
    }
    single.extend(by_id.into_values());
    single
}

/// The rule in words and its outcome: `None` where it does not apply, `Some(None)` when the load held,
/// `Some(Some(why))` when it fell short.
fn apply(
    rows: &[LoadRow],
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
                if let Some(ramp) = ramp_s(rows, inputs, parallel).filter(|r| *r > tol * window_s) {
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
            (rule, schedule_shortfall(rows, window_s, tol))
        }
        LoadRule::Open { .. } | LoadRule::Trace => {
            let what = if inputs.rule == LoadRule::Trace {
                "trace replay: sends keep the trace's arrival times"
            } else {
                "paced: sends keep the drawn arrival schedule"
            };
            let rule = format!("{what} (achieved rate ≥ {}% of the schedule's)", 100.0 - pct);
            (rule, schedule_shortfall(rows, window_s, tol))
        }
        LoadRule::Unjudged(why) => (format!("no rule applies: {why}"), None),
    }
}

/// The send window against the schedule's: `None` without scheduled times.
fn schedule_shortfall(rows: &[LoadRow], window_s: f64, tol: f64) -> Option<Option<String>> {
    let scheduled: Vec<f64> = rows.iter().filter_map(|r| r.scheduled_s).collect();
    if scheduled.len() < 2 || window_s <= 0.0 {
        return (scheduled.len() == rows.len()).then_some(None);
    }
    let lo = scheduled.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = scheduled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let n = (rows.len() - 1) as f64;
    let (schedule_rate, achieved) = (n / (hi - lo).max(f64::MIN_POSITIVE), n / window_s);
    Some((achieved < schedule_rate * (1.0 - tol)).then(|| {
        format!(
            "arrival process fell behind: sent {achieved:.2} req/s against a schedule of {schedule_rate:.2} \
             req/s"
        )
    }))
}

/// `Load Reached After (s)` over the in-flight steps (warmup included): see [`LoadVerdict`].
fn reached_after(rule: &LoadRule, steps: &[(f64, i64)]) -> Option<f64> {
    match *rule {
        LoadRule::Closed {
            parallel, number, ..
        } => {
            let first = steps.first()?.0;
            let level = 0.95 * parallel.min(number) as f64;
            let (start, _) = window::span_at_or_above(steps, level)?;
            Some(start - first)
        }
        LoadRule::Open { ramp_up_s, .. } | LoadRule::Paced { ramp_up_s, .. } => {
            Some(ramp_up_s.unwrap_or(0.0))
        }
        LoadRule::Trace | LoadRule::Unjudged(_) => None,
    }
}

/// Closed loop: seconds from the first send until `parallel` requests were first in flight (95 %).
fn ramp_s(rows: &[LoadRow], inputs: &LoadInputs, parallel: u64) -> Option<f64> {
    let mut in_flight = spans(rows, false);
    in_flight.extend_from_slice(&inputs.warmup_spans);
    let steps = window::steps(&in_flight);
    let first = steps.first()?.0;
    let (start, _) = window::span_at_or_above(&steps, 0.95 * parallel as f64)?;
    Some(start - first)
}

#[cfg(test)]
mod tests;
