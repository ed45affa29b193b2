//! Arrival schedules (pure, seeded). Waiting for a slot precisely is [`super::timer`]'s job.

use rand::Rng;
use rand_distr::{Distribution, Exp};

/// Poisson arrival offsets in seconds for `n` requests at `rate` req/s, on an absolute timeline: the
/// cumulative sum of exponential gaps, rescaled so the last arrival lands at exactly `n / rate`
/// (evalscope's schedule, spec §6.2). The first request also waits its gap.
pub fn poisson_offsets_s(n: usize, rate: f64, rng: &mut impl Rng) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let exp = Exp::new(rate).expect("rate is validated > 0");
    let mut acc = 0.0;
    let mut offsets: Vec<f64> = (0..n)
        .map(|_| {
            acc += exp.sample(rng);
            acc
        })
        .collect();
    let last = *offsets.last().expect("n > 0");
    if last > 0.0 {
        let scale = (n as f64 / rate) / last;
        for o in &mut offsets {
            *o *= scale;
        }
    }
    offsets
}

/// [`poisson_offsets_s`] drawn from a generator seeded with `seed`: the schedule of a run, the same in
/// every process that builds the plan (the dispatchers and the shard split use this one function).
pub fn seeded_offsets_s(n: usize, rate: f64, seed: u64) -> Vec<f64> {
    use rand::SeedableRng;
    poisson_offsets_s(n, rate, &mut rand::rngs::StdRng::seed_from_u64(seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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
}
