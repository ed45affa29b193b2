//! Timing noise (`--mock-jitter-cv`): each request's time to first token, and each gap between its tokens,
//! multiplied by an independent log-normal factor with mean 1 and the given coefficient of variation, so
//! the simulator's latencies vary the way a real server's do and statistics over them (`llmperf compare`)
//! meet realistic variance. The draws are seeded: request `id` (the simulator's 1, 2, … count) gets the
//! generator `seed` ⊕ `id` would give in any run, so the same seed gives the same factors.
//!
//! A factor `F = exp(μ + σ·Z)` with `σ² = ln(1 + cv²)` and `μ = −σ²/2` has `E[F] = 1` and `sd(F) = cv`:
//! the simulator's mean TTFT and ITL stay the configured ones, and a run with TTFT × 1.1 has every
//! percentile of its TTFT distribution exactly 1.1 times the other's.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::error::SimError;

/// The noise setting: a coefficient of variation (0 = none) and the seed of the draws.
#[derive(Debug, Clone, Copy, Default)]
pub struct Jitter {
    cv: f64,
    seed: u64,
}

impl PartialEq for Jitter {
    fn eq(&self, other: &Jitter) -> bool {
        self.cv.to_bits() == other.cv.to_bits() && self.seed == other.seed
    }
}

impl Eq for Jitter {}

/// The largest coefficient of variation accepted (a factor's spread is already extreme well before).
pub const MAX_CV: f64 = 10.0;

impl Jitter {
    /// Noise with coefficient of variation `cv` (0 to [`MAX_CV`]), drawn from `seed`; the error says why
    /// `cv` is not one (for the flag's message).
    pub fn new(cv: f64, seed: u64) -> Result<Jitter, SimError> {
        if !(cv.is_finite() && (0.0..=MAX_CV).contains(&cv)) {
            return Err(SimError::JitterCv { cv, max: MAX_CV });
        }
        Ok(Jitter { cv, seed })
    }

    /// The coefficient of variation (0: no jitter).
    pub fn cv(&self) -> f64 {
        self.cv
    }

    /// Whether there is any noise.
    pub fn is_on(&self) -> bool {
        self.cv > 0.0
    }

    /// The factors of request `id`: `None` without noise.
    pub(crate) fn for_request(&self, id: u64) -> Option<Draws> {
        if !self.is_on() {
            return None;
        }
        let sigma = (1.0 + self.cv * self.cv).ln().sqrt();
        let dist = LogNormal::new(-sigma * sigma / 2.0, sigma).ok()?;
        // SplitMix64's finaliser spreads consecutive ids over the seed space.
        let mut z = self.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Some(Draws {
            rng: ChaCha8Rng::seed_from_u64(z),
            dist,
        })
    }

    /// `ttft` of request `id` with its factor (the first draw of its generator).
    pub(crate) fn scale_ttft(&self, id: u64, ttft: Duration) -> Duration {
        match self.for_request(id) {
            Some(mut d) => d.scale(ttft),
            None => ttft,
        }
    }
}

/// One request's stream of factors: the first scales its TTFT, each next one a token gap.
#[derive(Debug, Clone)]
pub(crate) struct Draws {
    rng: ChaCha8Rng,
    dist: LogNormal<f64>,
}

impl Draws {
    /// `d` times the next factor.
    pub(crate) fn scale(&mut self, d: Duration) -> Duration {
        let f = self.dist.sample(&mut self.rng);
        Duration::try_from_secs_f64(d.as_secs_f64() * f).unwrap_or(Duration::from_secs(86_400))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_have_mean_one_and_the_asked_cv() {
        let j = Jitter::new(0.2, 7).unwrap();
        let ms = Duration::from_millis(100);
        let xs: Vec<f64> = (1..=40_000)
            .map(|id| j.scale_ttft(id, ms).as_secs_f64() / 0.1)
            .collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
        assert!((sd - 0.2).abs() < 0.01, "{sd}");
        // Seeded: the same id gives the same factor, another seed another one.
        assert_eq!(j.scale_ttft(5, ms), j.scale_ttft(5, ms));
        let other = Jitter::new(0.2, 8).unwrap();
        assert_ne!(j.scale_ttft(5, ms), other.scale_ttft(5, ms));
    }

    #[test]
    fn zero_is_no_noise_and_bad_values_are_refused() {
        let j = Jitter::new(0.0, 1).unwrap();
        assert!(!j.is_on() && j.for_request(3).is_none());
        assert_eq!(
            j.scale_ttft(3, Duration::from_millis(5)),
            Duration::from_millis(5)
        );
        for bad in [-0.1, f64::NAN, f64::INFINITY, 11.0] {
            assert!(Jitter::new(bad, 0).is_err(), "{bad}");
        }
    }
}
