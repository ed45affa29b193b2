//! The distributions llmperf's intervals need: the standard normal quantile, Student's t (fractional
//! degrees of freedom, for Welch's intervals) and the binomial CDF (for order-statistic intervals), all
//! through the regularised incomplete beta function.

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error ~1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let series = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b), a, b > 0.
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` > 0 degrees of freedom (fractional allowed).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    let tail = 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (fractional allowed; infinite for
/// `df` ≤ 0 at p > 1/2), to ~1e-10, by bisection on [`t_cdf`].
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return if p > 0.5 {
            f64::INFINITY
        } else if p < 0.5 {
            f64::NEG_INFINITY
        } else {
            0.0
        };
    }
    if p == 0.5 {
        return 0.0;
    }
    if df > 1e7 {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let mut hi = normal_quantile(p).max(1.0);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// P(B ≤ k) for B ~ Binomial(n, p).
pub fn binomial_cdf(k: i64, n: u64, p: f64) -> f64 {
    if k < 0 {
        return 0.0;
    }
    if k as u64 >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let k = k as f64;
    beta_inc(n as f64 - k, k + 1.0, 1.0 - p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn quantiles_match_tables() {
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-5));
        // Student's t, two-sided 95 % and one-sided 95 % (any statistics table).
        for (df, q) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (3.0, 3.1824),
            (4.0, 2.7764),
            (9.0, 2.2622),
            (30.0, 2.0423),
            (1000.0, 1.9623),
        ] {
            assert!(close(t_quantile(0.975, df), q, 1e-3), "df {df}");
        }
        assert!(close(t_quantile(0.95, 5.0), 2.0150, 1e-3));
        assert!(close(t_quantile(0.025, 4.0), -2.7764, 1e-3));
        // Fractional df lies between its neighbours.
        let q = t_quantile(0.975, 3.5);
        assert!(q < 3.1824 && q > 2.7764, "{q}");
    }

    #[test]
    fn binomial_cdf_matches_sums() {
        // Exact sums of the pmf.
        let direct = |k: u64, n: u64, p: f64| -> f64 {
            (0..=k)
                .map(|i| {
                    let ln_c = ln_gamma(n as f64 + 1.0)
                        - ln_gamma(i as f64 + 1.0)
                        - ln_gamma((n - i) as f64 + 1.0);
                    (ln_c + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln()).exp()
                })
                .sum()
        };
        for (k, n, p) in [
            (3, 10, 0.5),
            (95, 100, 0.99),
            (980, 1000, 0.99),
            (0, 5, 0.2),
        ] {
            assert!(
                close(binomial_cdf(k as i64, n, p), direct(k, n, p), 1e-10),
                "{k} {n} {p}"
            );
        }
        assert_eq!(binomial_cdf(-1, 10, 0.5), 0.0);
        assert_eq!(binomial_cdf(10, 10, 0.5), 1.0);
        // Large n stays accurate (normal approximation with continuity correction as a check).
        let n = 1_000_000u64;
        let c = binomial_cdf(990_000, n, 0.99);
        assert!(
            close(c, 0.5 + 0.5 / (n as f64 * 0.0099).sqrt() * 0.3989, 2e-3),
            "{c}"
        );
    }
}
