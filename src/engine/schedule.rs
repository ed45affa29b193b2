//! Arrival schedules (pure, seeded). Waiting for a slot precisely is [`super::timer`]'s job.
//!
//! [`arrival_offsets_s`] draws the gaps between arrivals (exponential, or gamma with shape `k` =
//! `--burstiness` and mean 1: k = 1 is Poisson, k < 1 burstier, k > 1 more even, as vLLM's flag), rescales
//! them so their cumulative sum ends at exactly `n` (evalscope's rule: the last arrival of a plain schedule
//! lands at `n / rate`), and maps that "expected arrivals" axis to time through the rate profile: constant
//! `rate`, or with `--ramp-up D` a rate rising linearly from 0 to `rate` over the first `D` seconds and
//! constant after.
//!
//! [`Arrivals`] yields the same offsets one at a time in constant memory (a run of 86 M requests needs no
//! 690 MB schedule): a first pass over the seeded gaps finds the rescaling factor, a second pass from the
//! same seed yields each offset as it is needed. [`arrival_offsets_s`] is the whole list at once, kept as
//! the reference the iterator is tested against.

use rand::Rng;
use rand_distr::{Distribution, Exp, Gamma};

pub use crate::plan::ArrivalShape;

/// Poisson arrival offsets in seconds for `n` requests at `rate` req/s, on an absolute timeline: the
/// cumulative sum of exponential gaps, rescaled so the last arrival lands at exactly `n / rate`
/// (evalscope's schedule, spec §6.2). The first request also waits its gap.
pub fn poisson_offsets_s(n: usize, rate: f64, rng: &mut impl Rng) -> Vec<f64> {
    arrival_offsets_s(n, rate, ArrivalShape::default(), rng)
}

/// Arrival offsets in seconds for `n` requests at `rate` req/s shaped by `shape` (see the module doc).
/// With the default shape this is exactly [`poisson_offsets_s`] (same draws, same values).
pub fn arrival_offsets_s(n: usize, rate: f64, shape: ArrivalShape, rng: &mut impl Rng) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let mut acc = 0.0;
    let mut offsets: Vec<f64> = if shape.burstiness == 1.0 {
        let exp = Exp::new(rate).expect("rate is validated > 0");
        (0..n)
            .map(|_| {
                acc += exp.sample(rng);
                acc
            })
            .collect()
    } else {
        let k = shape.burstiness;
        let gamma = Gamma::new(k, 1.0 / (k * rate)).expect("burstiness is validated > 0");
        (0..n)
            .map(|_| {
                acc += gamma.sample(rng);
                acc
            })
            .collect()
    };
    let last = *offsets.last().expect("n > 0");
    if last > 0.0 {
        let scale = (n as f64 / rate) / last;
        for o in &mut offsets {
            *o *= scale;
        }
    }
    if let Some(d) = shape.ramp_up_s.filter(|d| *d > 0.0) {
        for o in &mut offsets {
            *o = ramp_time_s(*o * rate, rate, d);
        }
    }
    offsets
}

/// The time at which `expected` arrivals have been due under a rate rising linearly from 0 to `rate` over
/// `ramp_s` seconds, then constant: the inverse of Λ(t) = rate·t²/(2·ramp) (t ≤ ramp), rate·(t − ramp/2)
/// after.
fn ramp_time_s(expected: f64, rate: f64, ramp_s: f64) -> f64 {
    let during = rate * ramp_s / 2.0;
    if expected <= during {
        (2.0 * ramp_s * expected / rate).sqrt()
    } else {
        ramp_s + (expected - during) / rate
    }
}

/// [`arrival_offsets_s`] drawn from a generator seeded with `seed`: the schedule of a run, the same in
/// every process that builds the plan (the dispatchers and the shard split use this one function).
pub fn seeded_offsets_s(n: usize, rate: f64, shape: ArrivalShape, seed: u64) -> Vec<f64> {
    use rand::SeedableRng;
    arrival_offsets_s(n, rate, shape, &mut rand::rngs::StdRng::seed_from_u64(seed))
}

/// The gap distribution of a shape: exponential (burstiness 1) or gamma with mean `1 / rate`.
#[derive(Clone, Copy)]
enum Gaps {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
}

impl Gaps {
    fn new(rate: f64, shape: ArrivalShape) -> Gaps {
        if shape.burstiness == 1.0 {
            Gaps::Exp(Exp::new(rate).expect("rate is validated > 0"))
        } else {
            let k = shape.burstiness;
            Gaps::Gamma(Gamma::new(k, 1.0 / (k * rate)).expect("burstiness is validated > 0"))
        }
    }

    fn sample(&self, rng: &mut impl Rng) -> f64 {
        match self {
            Gaps::Exp(d) => d.sample(rng),
            Gaps::Gamma(d) => d.sample(rng),
        }
    }
}

/// The seeded schedule of [`seeded_offsets_s`], one offset at a time and in constant memory: the same
/// values, bit for bit, in the same order.
pub struct Arrivals {
    rng: rand::rngs::StdRng,
    gaps: Gaps,
    /// Cumulative sum of the gaps drawn so far.
    acc: f64,
    /// The rescaling factor (`n / rate` over the unscaled last arrival), `None` when there is none.
    scale: Option<f64>,
    rate: f64,
    ramp_s: Option<f64>,
    left: usize,
}

impl Arrivals {
    /// The schedule of `n` requests at `rate` req/s shaped by `shape`, drawn from `seed`. Draws the `n`
    /// gaps once to find the rescaling factor (about 5 ns a gap), then yields the offsets from the start.
    pub fn seeded(n: usize, rate: f64, shape: ArrivalShape, seed: u64) -> Arrivals {
        use rand::SeedableRng;
        let gaps = if n == 0 {
            // Never sampled: any distribution will do (and `rate` is not checked for an empty run).
            Gaps::Exp(Exp::new(1.0).expect("1 is a valid rate"))
        } else {
            Gaps::new(rate, shape)
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut last = 0.0;
        for _ in 0..n {
            last += gaps.sample(&mut rng);
        }
        Arrivals {
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            gaps,
            acc: 0.0,
            scale: (last > 0.0).then(|| (n as f64 / rate) / last),
            rate,
            ramp_s: shape.ramp_up_s.filter(|d| *d > 0.0),
            left: n,
        }
    }
}

impl Iterator for Arrivals {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.acc += self.gaps.sample(&mut self.rng);
        let mut o = self.acc;
        if let Some(scale) = self.scale {
            o *= scale;
        }
        if let Some(d) = self.ramp_s {
            o = ramp_time_s(o * self.rate, self.rate, d);
        }
        Some(o)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_lazy_schedule_is_the_list_bit_for_bit() {
        let shapes = [
            ArrivalShape::default(),
            ArrivalShape {
                burstiness: 0.5,
                ramp_up_s: None,
            },
            ArrivalShape {
                burstiness: 3.0,
                ramp_up_s: Some(4.0),
            },
            ArrivalShape {
                burstiness: 1.0,
                ramp_up_s: Some(2.5),
            },
        ];
        for shape in shapes {
            for (n, rate, seed) in [(0, 5.0, 1), (1, 5.0, 2), (7, 0.5, 3), (5_000, 200.0, 4)] {
                let list = seeded_offsets_s(n, rate, shape, seed);
                let lazy: Vec<f64> = Arrivals::seeded(n, rate, shape, seed).collect();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&lazy), bits(&list), "{shape:?} n {n} rate {rate}");
            }
        }
    }

    #[test]
    fn offsets_end_at_n_over_rate_and_increase() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let o = poisson_offsets_s(50, 10.0, &mut rng);
        assert_eq!(o.len(), 50);
        assert!((o[49] - 5.0).abs() < 1e-9);
        assert!(o.windows(2).all(|w| w[1] >= w[0]));
        assert!(o[0] > 0.0);
    }

    #[test]
    fn same_seed_same_schedule() {
        let a = poisson_offsets_s(20, 3.0, &mut rand::rngs::StdRng::seed_from_u64(1));
        let b = poisson_offsets_s(20, 3.0, &mut rand::rngs::StdRng::seed_from_u64(1));
        assert_eq!(a, b);
        assert!(poisson_offsets_s(0, 3.0, &mut rand::rngs::StdRng::seed_from_u64(1)).is_empty());
    }

    /// Squared coefficient of variation of the gaps (variance / mean²): 1 for Poisson, 1/k for gamma.
    fn gap_cv2(offsets: &[f64]) -> f64 {
        let gaps: Vec<f64> = std::iter::once(offsets[0])
            .chain(offsets.windows(2).map(|w| w[1] - w[0]))
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64;
        var / (mean * mean)
    }

    #[test]
    fn default_shape_is_the_poisson_schedule() {
        let a = poisson_offsets_s(100, 5.0, &mut rand::rngs::StdRng::seed_from_u64(3));
        let b = arrival_offsets_s(
            100,
            5.0,
            ArrivalShape::default(),
            &mut rand::rngs::StdRng::seed_from_u64(3),
        );
        assert_eq!(a, b);
    }

    #[test]
    fn gamma_gaps_have_dispersion_one_over_k() {
        for k in [0.5, 4.0] {
            let shape = ArrivalShape {
                burstiness: k,
                ramp_up_s: None,
            };
            let o = arrival_offsets_s(
                20_000,
                100.0,
                shape,
                &mut rand::rngs::StdRng::seed_from_u64(9),
            );
            assert!((o[o.len() - 1] - 200.0).abs() < 1e-6, "ends at n / rate");
            let cv2 = gap_cv2(&o);
            assert!((cv2 * k - 1.0).abs() < 0.1, "k {k}: CV² {cv2}");
        }
    }

    #[test]
    fn ramp_rises_linearly_then_holds_the_rate() {
        let shape = ArrivalShape {
            burstiness: 1.0,
            ramp_up_s: Some(10.0),
        };
        let o = arrival_offsets_s(
            4_000,
            100.0,
            shape,
            &mut rand::rngs::StdRng::seed_from_u64(5),
        );
        let count = |a: f64, b: f64| o.iter().filter(|t| **t >= a && **t < b).count() as f64;
        // Λ(5) = 100·25/20 = 125 arrivals in the first half of the ramp, 375 in the second.
        assert!(
            (count(0.0, 5.0) - 125.0).abs() < 35.0,
            "{}",
            count(0.0, 5.0)
        );
        assert!(
            (count(5.0, 10.0) - 375.0).abs() < 60.0,
            "{}",
            count(5.0, 10.0)
        );
        // After the ramp: the full rate.
        let rate_after = count(10.0, 40.0) / 30.0;
        assert!((rate_after - 100.0).abs() < 6.0, "{rate_after}");
        assert!(o.windows(2).all(|w| w[1] >= w[0]));
    }
}
