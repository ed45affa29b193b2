//! Requests in flight over time, from each request's send and end times: the time-weighted mean over a
//! window (`Delivered Concurrency`), the most at once (`Max In Flight`), and the span in which the count
//! stayed at or above a level (the closed-loop plateau).

/// One interval in flight: `(start_s, end_s)`, seconds on any common time base.
pub type Span = (f64, f64);

/// The in-flight count as steps: `(time_s, count from that time on)`, in time order. An end and a start
/// at the same instant count the end first (a slot freed and refilled is never two requests).
pub fn steps(spans: &[Span]) -> Vec<(f64, i64)> {
    let mut events: Vec<(f64, i64)> = Vec::with_capacity(spans.len() * 2);
    for &(s, e) in spans {
        events.push((s, 1));
        events.push((e.max(s), -1));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<(f64, i64)> = Vec::with_capacity(events.len());
    let mut n = 0;
    for (t, d) in events {
        n += d;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = n,
            _ => out.push((t, n)),
        }
    }
    out
}

/// The most requests in flight at once.
pub fn max_in_flight(steps: &[(f64, i64)]) -> i64 {
    steps.iter().map(|s| s.1).max().unwrap_or(0)
}

/// The time-weighted mean count over `[from_s, to_s]`; `None` for an empty window.
pub fn mean_over(steps: &[(f64, i64)], from_s: f64, to_s: f64) -> Option<f64> {
    if to_s <= from_s {
        return None;
    }
    let mut area = 0.0;
    let mut level = 0i64;
    let mut at = from_s;
    for &(t, n) in steps {
        if t > at {
            let until = t.min(to_s);
            if until > at {
                area += level as f64 * (until - at);
                at = until;
            }
        }
        if t >= to_s {
            break;
        }
        level = n;
    }
    if to_s > at {
        area += level as f64 * (to_s - at);
    }
    Some(area / (to_s - from_s))
}

/// From the first time the count reached `level` to the last time it dropped below it after that;
/// `None` when it never reached it.
pub fn span_at_or_above(steps: &[(f64, i64)], level: f64) -> Option<Span> {
    let start = steps.iter().position(|s| s.1 as f64 >= level)?;
    let mut end = steps[start].0;
    for w in steps[start..].windows(2) {
        if w[0].1 as f64 >= level {
            end = w[1].0;
        }
    }
    Some((steps[start].0, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_overlapping_requests() {
        // 0..4 and 1..3: one, then two from 1 to 3, then one.
        let s = steps(&[(0.0, 4.0), (1.0, 3.0)]);
        assert_eq!(s, vec![(0.0, 1), (1.0, 2), (3.0, 1), (4.0, 0)]);
        assert_eq!(max_in_flight(&s), 2);
        assert_eq!(mean_over(&s, 0.0, 4.0), Some(1.5));
        assert_eq!(mean_over(&s, 1.0, 3.0), Some(2.0));
        assert_eq!(mean_over(&s, 2.0, 2.0), None);
        assert_eq!(span_at_or_above(&s, 2.0), Some((1.0, 3.0)));
        assert_eq!(span_at_or_above(&s, 3.0), None);
    }

    #[test]
    fn a_slot_refilled_at_the_same_instant_is_one_request() {
        let s = steps(&[(0.0, 1.0), (1.0, 2.0)]);
        assert_eq!(max_in_flight(&s), 1);
        assert_eq!(mean_over(&s, 0.0, 2.0), Some(1.0));
    }
}
