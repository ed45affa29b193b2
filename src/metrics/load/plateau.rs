//! The plateau window of a run (docs/load-verdict.md): the interval in which the configured load was
//! held — closed loop: requests (conversations) in flight ≥ 95 % of `--parallel`; open loop: from the end
//! of the arrival ramp to the last send — its start, end and share of the run, and the headline metrics
//! over it as the `Plateau …` summary keys (throughputs of the requests completed in it; TTFT, TPOT and
//! latency mean, p50 and p99 of the successful requests sent in it, evalscope's nearest-rank method).

use serde::Serialize;

use super::facts::{LoadFacts, Wanted};
use super::rows::LoadRow;
use super::rules::{full_level, LoadRule, PlateauRule};
use super::window;
use crate::metrics::nearest_rank::nearest_rank;

/// A run's plateau and its metrics; serialised as its `Plateau …` keys (every key present, `null` where
/// there is no window or no request to measure).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Plateau {
    /// Seconds from the first measured send.
    #[serde(rename = "Plateau Start (s)")]
    pub start_s: Option<f64>,
    /// Seconds from the first measured send.
    #[serde(rename = "Plateau End (s)")]
    pub end_s: Option<f64>,
    /// (end − start) / (last completion − first send) × 100.
    #[serde(rename = "Plateau Coverage (%)")]
    pub coverage_pct: Option<f64>,
    /// Successful requests completed in the window.
    #[serde(rename = "Plateau Requests")]
    pub requests: Option<u64>,
    /// `requests` / the window's length.
    #[serde(rename = "Plateau Request Throughput (req/s)")]
    pub request_throughput: Option<f64>,
    /// Output tokens of the successful requests completed in the window / its length.
    #[serde(rename = "Plateau Output Throughput (tok/s)")]
    pub output_throughput: Option<f64>,
    /// Prompt and output tokens of the successful requests completed in the window / its length.
    #[serde(rename = "Plateau Total Throughput (tok/s)")]
    pub total_throughput: Option<f64>,
    /// TTFT of the successful requests sent in the window (streamed ones where any was streamed).
    #[serde(flatten)]
    pub ttft: Stats<TtftKeys>,
    /// TPOT of the successful streamed requests with more than one output token sent in the window.
    #[serde(flatten)]
    pub tpot: Stats<TpotKeys>,
    /// Latency of the successful requests sent in the window.
    #[serde(flatten)]
    pub latency: Stats<LatencyKeys>,
    /// How the window was found, or why there is none, in words.
    #[serde(rename = "Plateau Rule")]
    pub rule: String,
}

/// Mean, p50 and p99 of one metric (seconds), under the key names of `K`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stats<K> {
    /// Mean.
    pub avg_s: Option<f64>,
    /// Nearest-rank p50.
    pub p50_s: Option<f64>,
    /// Nearest-rank p99.
    pub p99_s: Option<f64>,
    keys: std::marker::PhantomData<K>,
}

/// The key names of one metric's [`Stats`].
pub trait StatKeys {
    /// Mean, p50, p99.
    const KEYS: [&'static str; 3];
}

macro_rules! stat_keys {
    ($name:ident, $metric:literal) => {
        /// The key names of the plateau's
        #[doc = $metric]
        /// statistics.
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name;
        impl StatKeys for $name {
            const KEYS: [&'static str; 3] = [
                concat!("Plateau Avg ", $metric, " (s)"),
                concat!("Plateau P50 ", $metric, " (s)"),
                concat!("Plateau P99 ", $metric, " (s)"),
            ];
        }
    };
}
stat_keys!(TtftKeys, "TTFT");
stat_keys!(TpotKeys, "TPOT");
stat_keys!(LatencyKeys, "Latency");

impl<K: StatKeys> Serialize for Stats<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        for (key, v) in K::KEYS.iter().zip([self.avg_s, self.p50_s, self.p99_s]) {
            m.serialize_entry(key, &v)?;
        }
        m.end()
    }
}

impl<K> Stats<K> {
    /// From `[mean, p50, p99]` (rounded to 6 decimals: microseconds); all `None` without values.
    fn from_parts(parts: Option<[f64; 3]>) -> Stats<K> {
        let r = |i: usize| parts.map(|p| round(p[i], 6));
        Stats {
            avg_s: r(0),
            p50_s: r(1),
            p99_s: r(2),
            keys: std::marker::PhantomData,
        }
    }
}

/// `[mean, p50, p99]` of `values`' finite ones (sorted, summed in ascending order); `None` when empty.
fn summarize(mut values: Vec<f64>) -> Option<[f64; 3]> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Some([mean, nearest_rank(&values, 50), nearest_rank(&values, 99)])
}

fn round(x: f64, digits: u32) -> f64 {
    crate::pyjson::round(x, digits)
}

/// What the plateau's metrics are computed from, over its window (unrounded).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Window {
    /// Successful requests completed in the window.
    pub requests: u64,
    /// Their output tokens.
    pub output_tokens: u64,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// `[mean, p50, p99]` of the TTFT of the successful requests sent in the window (streamed ones where
    /// any was streamed).
    pub ttft: Option<[f64; 3]>,
    /// The same of TPOT (streamed requests with more than one output token, where any was streamed).
    pub tpot: Option<[f64; 3]>,
    /// The same of latency (every successful request sent in the window).
    pub latency: Option<[f64; 3]>,
}

impl Window {
    /// The window `[a, b]`'s figures over `rows` in memory: the reference for [`super::db::plateau_window`].
    pub fn of_rows(rows: &[LoadRow], (a, b): window::Span) -> Window {
        let ok = || rows.iter().filter(|r| r.metrics.success);
        let done: Vec<&LoadRow> = ok().filter(|r| r.end_s >= a && r.end_s <= b).collect();
        let sent: Vec<&LoadRow> = ok().filter(|r| r.start_s >= a && r.start_s <= b).collect();
        let any_stream = sent.iter().any(|r| r.metrics.stream);
        let timed = || sent.iter().filter(|r| r.metrics.stream || !any_stream);
        Window {
            requests: done.len() as u64,
            output_tokens: done.iter().map(|r| r.metrics.completion_tokens).sum(),
            prompt_tokens: done.iter().map(|r| r.metrics.prompt_tokens).sum(),
            ttft: summarize(timed().filter_map(|r| r.metrics.ttft_s).collect()),
            tpot: summarize(
                timed()
                    .filter(|r| !any_stream || r.metrics.completion_tokens > 1)
                    .filter_map(|r| r.metrics.tpot_s)
                    .collect(),
            ),
            latency: summarize(sent.iter().filter_map(|r| r.metrics.latency_s).collect()),
        }
    }
}

/// The plateau window on the rows' own time base: `Ok((start, end))`, or `Err(why)` when there is none.
/// The facts' in-flight figures count warmup requests, as for the verdict (they hold slots).
pub fn window_of(facts: &LoadFacts, rule: &PlateauRule) -> Result<window::Span, String> {
    if facts.n == 0 {
        return Err("no request was sent".into());
    }
    let (first, last_send, last_end) = (facts.first_send_s, facts.last_send_s, facts.last_end_s);
    let (start, end) = match *rule {
        PlateauRule::Unmeasured(why) => return Err(why.into()),
        PlateauRule::Closed {
            parallel, number, ..
        } if number <= parallel => {
            return Err(format!(
                "--number {number} ≤ --parallel {parallel}: the run never reaches a steady state"
            ))
        }
        PlateauRule::Closed {
            parallel,
            conversations,
            ..
        } => {
            let level = full_level(parallel);
            let (a, b) = facts
                .in_flight(conversations)
                .span_at(level)
                .ok_or_else(|| {
                    format!("requests in flight never reached 95 % of --parallel {parallel}")
                })?;
            (a.max(first), b.min(last_end))
        }
        PlateauRule::Open { ramp_s } => (first + ramp_s.unwrap_or(0.0).max(0.0), last_send),
    };
    if end > start {
        Ok((start, end))
    } else {
        Err("the window is empty (the run ended before its load reached its plateau)".into())
    }
}

/// The plateau under `rule` of the run `facts` describe; `measure` gives the figures over its window.
pub fn plateau_of<E>(
    facts: &LoadFacts,
    rule: &PlateauRule,
    measure: impl FnOnce(window::Span) -> Result<Window, E>,
) -> Result<Plateau, E> {
    let window = window_of(facts, rule);
    let rule_words = match (&window, rule) {
        (Err(why), _) => format!("no plateau: {why}"),
        (Ok(_), PlateauRule::Closed { parallel, .. }) => format!(
            "closed loop: requests in flight ≥ 95 % of --parallel {parallel}, from the first time \
             reached to the last time it dropped below"
        ),
        (Ok(_), PlateauRule::Open { ramp_s: Some(r) }) if *r > 0.0 => {
            format!("open loop: from --ramp-up {r} s after the first send to the last send")
        }
        // Open loop without a ramp (an unmeasured rule has no window).
        (Ok(_), _) => "open loop: from the first send to the last send".into(),
    };
    let Ok((a, b)) = window else {
        return Ok(Plateau {
            rule: rule_words,
            ..Default::default()
        });
    };
    let w = measure((a, b))?;
    let first = facts.first_send_s;
    let length = b - a;
    let run_s = facts.last_end_s - first;
    Ok(Plateau {
        start_s: Some(round(a - first, 6)),
        end_s: Some(round(b - first, 6)),
        coverage_pct: (run_s > 0.0).then(|| round(length / run_s * 100.0, 2)),
        requests: Some(w.requests),
        request_throughput: Some(round(w.requests as f64 / length, 4)),
        output_throughput: Some(round(w.output_tokens as f64 / length, 4)),
        total_throughput: Some(round(
            (w.prompt_tokens + w.output_tokens) as f64 / length,
            4,
        )),
        ttft: Stats::from_parts(w.ttft),
        tpot: Stats::from_parts(w.tpot),
        latency: Stats::from_parts(w.latency),
        rule: rule_words,
    })
}

/// The plateau of `rows` in memory under `rule`, `warmup_spans` counted in flight: the reference for the
/// streamed one ([`super::judge_db`]).
pub fn plateau(rows: &[LoadRow], rule: &PlateauRule, warmup_spans: &[window::Span]) -> Plateau {
    let wanted = Wanted::of(&LoadRule::Unjudged(""), rule);
    let facts = LoadFacts::of_rows(rows, warmup_spans, &wanted);
    plateau_of(&facts, rule, |w| {
        Ok::<_, std::convert::Infallible>(Window::of_rows(rows, w))
    })
    .unwrap_or_else(|e| match e {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::load::RowMetrics;

    /// A successful streamed request sent at `start`, done at `end`, first token after `ttft` s, 3 tokens.
    fn ok(start: f64, end: f64, ttft: f64) -> LoadRow {
        LoadRow {
            scheduled_s: Some(start),
            start_s: start,
            end_s: end,
            metrics: RowMetrics {
                success: true,
                stream: true,
                prompt_tokens: 10,
                completion_tokens: 3,
                ttft_s: Some(ttft),
                tpot_s: Some((end - start - ttft) / 2.0),
                latency_s: Some(end - start),
            },
            ..Default::default()
        }
    }

    fn closed(parallel: u64, number: u64) -> PlateauRule {
        PlateauRule::Closed {
            parallel,
            number,
            conversations: false,
        }
    }

    /// Two slots: one busy from 0 to 10, the other filled at 2 and kept full until 8: the plateau is 2..8.
    #[test]
    fn a_closed_loop_plateau_is_where_every_slot_is_busy() {
        let mut rows = vec![ok(0.0, 10.0, 0.5)];
        rows.extend((0..6).map(|i| ok(2.0 + i as f64, 3.0 + i as f64, 0.25)));
        let p = plateau(&rows, &closed(2, 7), &[]);
        assert_eq!((p.start_s, p.end_s), (Some(2.0), Some(8.0)));
        assert_eq!(p.coverage_pct, Some(60.0));
        // Completed in [2, 8]: the six short ones (3..=8), not the long one (10).
        assert_eq!(p.requests, Some(6));
        assert_eq!(p.request_throughput, Some(1.0));
        assert_eq!(p.output_throughput, Some(3.0));
        assert_eq!(p.total_throughput, Some(13.0));
        // Sent in [2, 8]: the six short ones.
        assert_eq!(p.ttft.avg_s, Some(0.25));
        assert_eq!(p.latency.p99_s, Some(1.0));
        assert_eq!(p.tpot.p50_s, Some(0.375));
        assert!(p.rule.starts_with("closed loop"), "{}", p.rule);
    }

    #[test]
    fn warmup_spans_count_in_flight_but_the_window_starts_at_the_first_measured_send() {
        // A warmup request holds a slot from −1 to 3; the measured ones fill the other slot from 0.
        let rows: Vec<LoadRow> = (0..6).map(|i| ok(i as f64, i as f64 + 1.0, 0.1)).collect();
        let p = plateau(&rows, &closed(2, 6), &[(-1.0, 3.0)]);
        assert_eq!((p.start_s, p.end_s), (Some(0.0), Some(3.0)));
    }

    /// Two conversations of three turns with 1 s of think time between turns: with conversations counted,
    /// both slots stay busy from the second conversation's first send to the first one's last reply.
    #[test]
    fn multi_turn_counts_conversations_in_flight_through_their_think_time() {
        let turns = |id: i64, from: f64| {
            (0..3).map(move |t| LoadRow {
                conversation: Some(id),
                ..ok(from + 2.0 * t as f64, from + 2.0 * t as f64 + 1.0, 0.1)
            })
        };
        let rows: Vec<LoadRow> = turns(1, 0.0).chain(turns(2, 0.5)).collect();
        let rule = |conversations| PlateauRule::Closed {
            parallel: 2,
            number: 6,
            conversations,
        };
        let p = plateau(&rows, &rule(true), &[]);
        assert_eq!((p.start_s, p.end_s), (Some(0.5), Some(5.0)));
        let p = plateau(&rows, &rule(false), &[]);
        // Counted as requests, the turns overlap from 0.5 s, 2.5 s and 4.5 s: the dips between fall inside
        // the window (first reach to last drop). Turns that never overlap leave no plateau at all.
        assert_eq!((p.start_s, p.end_s), (Some(0.5), Some(5.0)));
        let apart: Vec<LoadRow> = turns(1, 0.0).chain(turns(2, 1.0)).collect();
        assert!(plateau(&apart, &rule(false), &[])
            .rule
            .contains("never reached"));
        let p = plateau(&apart, &rule(true), &[]);
        assert_eq!((p.start_s, p.end_s), (Some(1.0), Some(5.0)));
    }

    #[test]
    fn no_plateau_when_number_fits_in_one_wave_or_the_cap_is_never_reached() {
        let rows = vec![ok(0.0, 1.0, 0.1), ok(0.0, 1.0, 0.1)];
        let p = plateau(&rows, &closed(8, 2), &[]);
        assert_eq!(p.start_s, None);
        assert_eq!(p.request_throughput, None);
        assert!(p.rule.contains("--number 2 ≤ --parallel 8"), "{}", p.rule);
        let apart: Vec<LoadRow> = (0..4).map(|i| ok(i as f64, i as f64 + 1.0, 0.1)).collect();
        let p = plateau(&apart, &closed(2, 4), &[]);
        assert!(p.rule.contains("never reached"), "{}", p.rule);
        let p = plateau(&apart, &PlateauRule::Unmeasured("trace replay"), &[]);
        assert_eq!(p.rule, "no plateau: trace replay");
        let json = serde_json::to_value(&p).unwrap();
        assert!(json["Plateau P99 TTFT (s)"].is_null(), "{json}");
        assert!(json["Plateau Start (s)"].is_null(), "{json}");
    }

    #[test]
    fn an_open_loop_plateau_starts_after_the_ramp_and_ends_at_the_last_send() {
        let mut rows: Vec<LoadRow> = (0..10).map(|i| ok(i as f64, i as f64 + 0.5, 0.1)).collect();
        rows[3].metrics.success = false;
        let p = plateau(&rows, &PlateauRule::Open { ramp_s: Some(4.0) }, &[]);
        assert_eq!((p.start_s, p.end_s), (Some(4.0), Some(9.0)));
        assert_eq!(p.coverage_pct, Some(round(5.0 / 9.5 * 100.0, 2)));
        // Completed in [4, 9]: 4.5 .. 8.5.
        assert_eq!(p.requests, Some(5));
        let p = plateau(&rows, &PlateauRule::Open { ramp_s: None }, &[]);
        assert_eq!(p.start_s, Some(0.0));
        // 0.5 .. 8.5 less the failure at 3.5.
        assert_eq!(p.requests, Some(8));
        let p = plateau(&rows, &PlateauRule::Open { ramp_s: Some(20.0) }, &[]);
        assert!(p.rule.contains("empty"), "{}", p.rule);
    }

    #[test]
    fn non_stream_runs_measure_every_success_and_tpot_skips_single_token_replies() {
        let mut rows: Vec<LoadRow> = (0..4).map(|i| ok(i as f64, i as f64 + 1.0, 0.2)).collect();
        rows[0].metrics.completion_tokens = 1;
        rows[0].metrics.tpot_s = Some(0.0);
        let p = plateau(&rows, &PlateauRule::Open { ramp_s: None }, &[]);
        // Streamed: TPOT over the three with more than one token.
        assert_eq!(p.tpot.avg_s, Some(0.4));
        for r in &mut rows {
            r.metrics.stream = false;
        }
        let p = plateau(&rows, &PlateauRule::Open { ramp_s: None }, &[]);
        assert_eq!(p.ttft.avg_s, Some(0.2));
        assert_eq!(p.tpot.avg_s, Some(0.3));
    }
}
