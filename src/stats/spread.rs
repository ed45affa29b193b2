//! One sample's mean, standard deviation, coefficient of variation and Student-t interval of the mean:
//! the SLA probes' confidence (`--sla-confidence`) and the repeat summaries (`--repeat`).

use super::dist::t_quantile;

/// Mean, sample standard deviation and the two-sided confidence interval of the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub stdev: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

impl Spread {
    /// The coefficient of variation, stdev / |mean| (NaN for a zero mean).
    pub fn cv(&self) -> f64 {
        if self.mean == 0.0 {
            f64::NAN
        } else {
            self.stdev / self.mean.abs()
        }
    }
}

/// The spread of `values` at confidence `level` (an unbounded interval for fewer than two values).
pub fn spread(values: &[f64], level: f64) -> Spread {
    let n = values.len();
    if n == 0 {
        return Spread {
            mean: f64::NAN,
            stdev: f64::NAN,
            low: f64::NAN,
            high: f64::NAN,
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Spread {
            mean,
            stdev: 0.0,
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
        };
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let stdev = var.sqrt();
    let half = t_quantile(0.5 + level / 2.0, (n - 1) as f64) * stdev / (n as f64).sqrt();
    Spread {
        mean,
        stdev,
        low: mean - half,
        high: mean + half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_by_hand() {
        // mean 2, sd 1, t(0.975, 2) = 4.3027: half-width 4.3027 / √3.
        let s = spread(&[1.0, 2.0, 3.0], 0.95);
        assert_eq!((s.mean, s.stdev), (2.0, 1.0));
        assert!((s.high - (2.0 + 4.3027 / 3f64.sqrt())).abs() < 1e-3);
        assert!((s.low - (2.0 - 4.3027 / 3f64.sqrt())).abs() < 1e-3);
        assert!((s.cv() - 0.5).abs() < 1e-12);
        let one = spread(&[5.0], 0.95);
        assert_eq!((one.low, one.high), (f64::NEG_INFINITY, f64::INFINITY));
        assert!(spread(&[], 0.95).mean.is_nan());
    }
}
