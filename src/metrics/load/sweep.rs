//! Requests in flight over time, computed in one pass over the send and end events in time order, with
//! constant memory: the same figures as [`super::window`]'s functions over the whole step list (which stay
//! as the reference the tests check this against), for a run of any length.
//!
//! Events come in `(time, +1 send | −1 end)` order, ends before sends at the same time; events at the same
//! time collapse into one step, as in [`super::window::steps`].

use super::window::Span;

/// What one pass over a run's in-flight counts measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InFlight {
    /// The time of the first step (the first send, warmup included); `None` without any.
    pub first_s: Option<f64>,
    /// The most in flight at once ([`super::window::max_in_flight`]).
    pub max: i64,
    /// The time-weighted mean over the asked window ([`super::window::mean_over`]).
    pub mean: Option<f64>,
    /// For each asked level, in order: [`super::window::span_at_or_above`].
    pub at_or_above: Vec<(f64, Option<Span>)>,
}

impl InFlight {
    /// The span at or above `level`, when it was asked for and reached.
    pub fn span_at(&self, level: f64) -> Option<Span> {
        self.at_or_above
            .iter()
            .find(|(l, _)| *l == level)
            .and_then(|(_, s)| *s)
    }

    /// The same figures from the whole step list ([`super::window`]): the reference.
    pub fn of_steps(steps: &[(f64, i64)], window: Span, levels: &[f64]) -> InFlight {
        use super::window;
        InFlight {
            first_s: steps.first().map(|s| s.0),
            max: window::max_in_flight(steps),
            mean: window::mean_over(steps, window.0, window.1),
            at_or_above: levels
                .iter()
                .map(|l| (*l, window::span_at_or_above(steps, *l)))
                .collect(),
        }
    }
}

/// The time-weighted mean over `[from, to]`, one step at a time.
#[derive(Debug, Clone)]
struct MeanOver {
    from: f64,
    to: f64,
    area: f64,
    level: i64,
    at: f64,
    done: bool,
}

impl MeanOver {
    fn step(&mut self, t: f64, n: i64) {
        if self.done {
            return;
        }
        if t > self.at {
            let until = t.min(self.to);
            if until > self.at {
                self.area += self.level as f64 * (until - self.at);
                self.at = until;
            }
        }
        if t >= self.to {
            self.done = true;
            return;
        }
        self.level = n;
    }

    fn finish(mut self) -> Option<f64> {
        if self.to <= self.from {
            return None;
        }
        if self.to > self.at {
            self.area += self.level as f64 * (self.to - self.at);
        }
        Some(self.area / (self.to - self.from))
    }
}

/// From the first step at or above `level` to the last step after it that left a level at or above it.
#[derive(Debug, Clone)]
struct AtOrAbove {
    level: f64,
    start: Option<f64>,
    end: f64,
    prev_n: i64,
}

impl AtOrAbove {
    fn step(&mut self, t: f64, n: i64) {
        if self.start.is_some() {
            if self.prev_n as f64 >= self.level {
                self.end = t;
            }
        } else if n as f64 >= self.level {
            self.start = Some(t);
            self.end = t;
        }
        self.prev_n = n;
    }
}

/// The one-pass accumulator: feed it every event in order, then [`Sweep::finish`].
#[derive(Debug, Clone)]
pub struct Sweep {
    count: i64,
    pending: Option<(f64, i64)>,
    first_s: Option<f64>,
    max: i64,
    mean: MeanOver,
    levels: Vec<AtOrAbove>,
}

impl Sweep {
    /// A sweep measuring the mean over `window` and the span at or above each of `levels`.
    pub fn new(window: Span, levels: &[f64]) -> Sweep {
        Sweep {
            count: 0,
            pending: None,
            first_s: None,
            max: 0,
            mean: MeanOver {
                from: window.0,
                to: window.1,
                area: 0.0,
                level: 0,
                at: window.0,
                done: false,
            },
            levels: levels
                .iter()
                .map(|l| AtOrAbove {
                    level: *l,
                    start: None,
                    end: 0.0,
                    prev_n: 0,
                })
                .collect(),
        }
    }

    /// One event: `delta` +1 at a send, −1 at an end.
    pub fn event(&mut self, t: f64, delta: i64) {
        self.count += delta;
        match self.pending.as_mut() {
            Some(p) if p.0 == t => p.1 = self.count,
            _ => {
                if let Some((pt, pn)) = self.pending.take() {
                    self.step(pt, pn);
                }
                self.pending = Some((t, self.count));
            }
        }
    }

    fn step(&mut self, t: f64, n: i64) {
        self.first_s.get_or_insert(t);
        self.max = self.max.max(n);
        self.mean.step(t, n);
        for l in &mut self.levels {
            l.step(t, n);
        }
    }

    /// The figures, once every event is in.
    pub fn finish(mut self) -> InFlight {
        if let Some((t, n)) = self.pending.take() {
            self.step(t, n);
        }
        InFlight {
            first_s: self.first_s,
            max: self.max,
            mean: self.mean.finish(),
            at_or_above: self
                .levels
                .iter()
                .map(|l| (l.level, l.start.map(|s| (s, l.end))))
                .collect(),
        }
    }
}

/// The events of `spans` in sweep order (ends first at equal times; an end never before its send).
pub fn events_of(spans: &[Span]) -> Vec<(f64, i64)> {
    let mut events: Vec<(f64, i64)> = spans
        .iter()
        .flat_map(|&(s, e)| [(s, 1), (e.max(s), -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    events
}

/// Merges two event streams, each in sweep order, into one in sweep order.
pub fn merge<A, B, E>(a: A, b: B) -> impl Iterator<Item = Result<(f64, i64), E>>
where
    A: Iterator<Item = Result<(f64, i64), E>>,
    B: Iterator<Item = (f64, i64)>,
{
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || {
        let take_b = match (a.peek(), b.peek()) {
            (Some(Ok(x)), Some(y)) => x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).is_gt(),
            (Some(_), _) => false,
            (None, Some(_)) => true,
            (None, None) => return None,
        };
        if take_b {
            b.next().map(Ok)
        } else {
            a.next()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::load::window;
    use rand::{Rng, SeedableRng};

    /// Random spans on a coarse time grid (many equal times, zero-length spans, ends before sends): the
    /// one-pass figures equal those of the whole step list.
    #[test]
    fn one_pass_equals_the_step_list() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for case in 0..300 {
            let n = rng.random_range(0..60);
            let spans: Vec<Span> = (0..n)
                .map(|_| {
                    let s = f64::from(rng.random_range(0..40)) / 4.0;
                    let e = s + f64::from(rng.random_range(-2..20)) / 4.0;
                    (s, e)
                })
                .collect();
            let window = (
                f64::from(rng.random_range(-4..20)) / 2.0,
                f64::from(rng.random_range(-4..30)) / 2.0,
            );
            let levels = [1.0, 2.0, 3.8, 7.0, rng.random_range(0.0..10.0)];
            let steps = window::steps(&spans);
            let want = InFlight::of_steps(&steps, window, &levels);
            let mut sweep = Sweep::new(window, &levels);
            for (t, d) in events_of(&spans) {
                sweep.event(t, d);
            }
            assert_eq!(
                sweep.finish(),
                want,
                "case {case}: {spans:?} over {window:?}"
            );
        }
    }

    #[test]
    fn merged_streams_stay_in_order() {
        let a = events_of(&[(0.0, 2.0), (1.0, 3.0)]);
        let b = events_of(&[(1.0, 2.0), (-1.0, 0.5)]);
        let merged: Vec<(f64, i64)> = merge(a.into_iter().map(Ok::<_, ()>), b.into_iter())
            .collect::<Result<_, _>>()
            .unwrap();
        let mut want = events_of(&[(0.0, 2.0), (1.0, 3.0), (1.0, 2.0), (-1.0, 0.5)]);
        want.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        assert_eq!(merged, want);
    }
}
