//! What the load verdict and the plateau window need to know about a run's stored rows: counts, first and
//! last times, the schedule's extent, refusals, and the in-flight figures of each way of counting. Built
//! from rows in memory ([`LoadFacts::of_rows`], the reference) or streamed out of the run's database
//! ([`super::db`]), so both paths share every decision made from them.

use super::rows::LoadRow;
use super::rules::{full_level, LoadRule, PlateauRule};
use super::sweep::InFlight;
use super::window::{self, Span};

/// The send and end times of the rows, and how the server refused them.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFacts {
    /// Rows with a send time.
    pub n: usize,
    /// The first send (`+inf` without rows).
    pub first_send_s: f64,
    /// The last send (`−inf` without rows).
    pub last_send_s: f64,
    /// The last end (`−inf` without rows).
    pub last_end_s: f64,
    /// Requests that could not connect.
    pub unreachable: usize,
    /// Requests whose connection was reset or closed before any response byte.
    pub dropped: usize,
    /// Rows with an intended send time, and the earliest and latest of them.
    pub scheduled: (usize, f64, f64),
    /// In flight counting requests (warmup included).
    pub requests: InFlight,
    /// In flight counting conversations (a multi-turn run's; `None` when no rule counts them).
    pub conversations: Option<InFlight>,
}

/// Which in-flight figures the rules need: the levels asked of each way of counting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Wanted {
    /// Levels over requests in flight.
    pub request_levels: Vec<f64>,
    /// Levels over conversations in flight; `None` when no rule counts conversations.
    pub conversation_levels: Option<Vec<f64>>,
}

impl Wanted {
    /// The levels `rule` and `plateau` look for.
    pub fn of(rule: &LoadRule, plateau: &PlateauRule) -> Wanted {
        let mut w = Wanted::default();
        let mut ask = |conversations: bool, level: f64| {
            let levels = if conversations {
                w.conversation_levels.get_or_insert_with(Vec::new)
            } else {
                &mut w.request_levels
            };
            if !levels.contains(&level) {
                levels.push(level);
            }
        };
        if let LoadRule::Closed {
            parallel,
            number,
            conversations,
        } = *rule
        {
            // `Load Reached After (s)` over what the rule counts; the ramp-up in the reason over requests.
            ask(conversations, full_level(parallel.min(number)));
            ask(false, full_level(parallel));
        }
        if let PlateauRule::Closed {
            parallel,
            conversations,
            ..
        } = *plateau
        {
            ask(conversations, full_level(parallel));
        }
        w
    }
}

impl LoadFacts {
    /// The send window: first to last send.
    pub fn send_window(&self) -> Span {
        (self.first_send_s, self.last_send_s)
    }

    /// In flight as the rule counts it: conversations when `conversations` (and they were swept).
    pub fn in_flight(&self, conversations: bool) -> &InFlight {
        match (&self.conversations, conversations) {
            (Some(c), true) => c,
            _ => &self.requests,
        }
    }

    /// The facts of `rows` in memory, with `warmup_spans` counted in flight: the reference for
    /// [`super::db`].
    pub fn of_rows(rows: &[LoadRow], warmup_spans: &[Span], wanted: &Wanted) -> LoadFacts {
        let starts = || rows.iter().map(|r| r.start_s);
        let first = starts().fold(f64::INFINITY, f64::min);
        let last = starts().fold(f64::NEG_INFINITY, f64::max);
        let last_end = rows
            .iter()
            .map(|r| r.end_s)
            .fold(f64::NEG_INFINITY, f64::max);
        let scheduled: Vec<f64> = rows.iter().filter_map(|r| r.scheduled_s).collect();
        let in_flight = |conversations: bool, levels: &[f64]| {
            let mut spans = spans(rows, conversations);
            spans.extend_from_slice(warmup_spans);
            InFlight::of_steps(&window::steps(&spans), (first, last), levels)
        };
        LoadFacts {
            n: rows.len(),
            first_send_s: first,
            last_send_s: last,
            last_end_s: last_end,
            unreachable: rows
                .iter()
                .filter(|r| r.failure_kind.as_deref() == Some("connect"))
                .count(),
            dropped: rows
                .iter()
                .filter(|r| {
                    r.status.is_none()
                        && matches!(r.failure_kind.as_deref(), Some("reset" | "disconnect"))
                })
                .count(),
            scheduled: (
                scheduled.len(),
                scheduled.iter().copied().fold(f64::INFINITY, f64::min),
                scheduled.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
            requests: in_flight(false, &wanted.request_levels),
            conversations: wanted
                .conversation_levels
                .as_ref()
                .map(|levels| in_flight(true, levels)),
        }
    }
}

/// Each request's (or, `conversations`, each conversation's) time in flight.
pub fn spans(rows: &[LoadRow], conversations: bool) -> Vec<Span> {
    if !conversations {
        return rows.iter().map(|r| (r.start_s, r.end_s)).collect();
    }
    let mut by_id: std::collections::BTreeMap<i64, Span> = Default::default();
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
