//! Turning one endpoint's scrapes into numbers: counter deltas between the baseline and the final scrape,
//! gauge statistics over every scrape, and histogram deltas turned into quantiles with their bucket error.
//!
//! Counter deltas are per series (`final − baseline`; a series absent from the baseline starts at 0, and a
//! value that went down means the server restarted, so the final value is the delta), summed per family.
//! Histogram deltas sum every series of a family per `le` bound. A quantile is estimated as Prometheus's
//! `histogram_quantile` does — linear interpolation inside the bucket holding the rank — and is stated with
//! that bucket's bounds: the true quantile of the observations lies in `(lower, upper]`, so the estimate is
//! off by at most `upper − lower` (the "bucket error"). A quantile in the `+Inf` bucket is reported as the
//! highest finite bound with an unbounded error.

use std::collections::BTreeMap;

use super::prom::{Exposition, Kind, Sample};

/// `name{k="v",…}`: one series, labels as written.
pub fn series_key(s: &Sample) -> String {
    if s.labels.is_empty() {
        return s.name.clone();
    }
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{}{{{}}}", s.name, labels.join(","))
}

/// One counter series over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterSeries {
    /// The series key.
    pub series: String,
    /// Value at the baseline scrape (0 when the series did not exist yet).
    pub start: f64,
    /// Value at the final scrape.
    pub end: f64,
    /// Increase over the run.
    pub delta: f64,
}

/// A counter family's increase over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterDelta {
    /// The family.
    pub family: String,
    /// Σ delta over its series.
    pub delta: f64,
    /// Each series.
    pub series: Vec<CounterSeries>,
}

/// The counter deltas of every counter family in `last`.
pub fn counter_deltas(first: &Exposition, last: &Exposition) -> Vec<CounterDelta> {
    let mut start: BTreeMap<String, f64> = BTreeMap::new();
    for f in first.families.iter().filter(|f| f.kind == Kind::Counter) {
        for s in &f.samples {
            start.insert(series_key(s), s.value);
        }
    }
    last.families
        .iter()
        .filter(|f| f.kind == Kind::Counter)
        .map(|f| {
            let series: Vec<CounterSeries> = f
                .samples
                .iter()
                .map(|s| {
                    let key = series_key(s);
                    let begin = start.get(&key).copied().unwrap_or(0.0);
                    let delta = if s.value >= begin {
                        s.value - begin
                    } else {
                        s.value
                    };
                    CounterSeries {
                        series: key,
                        start: begin,
                        end: s.value,
                        delta,
                    }
                })
                .collect();
            CounterDelta {
                family: f.name.clone(),
                delta: series.iter().map(|s| s.delta).sum(),
                series,
            }
        })
        .collect()
}

/// A histogram family's increase over the run, every series summed.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramDelta {
    /// The family.
    pub family: String,
    /// `(le, cumulative count increase)`, ascending, ending with `+Inf`.
    pub buckets: Vec<(f64, f64)>,
    /// Increase of `_sum`.
    pub sum: f64,
    /// Increase of `_count`.
    pub count: f64,
}

/// A quantile estimate and the bucket it lies in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantile {
    /// The estimate (linear inside the bucket).
    pub value: f64,
    /// The bucket's lower bound.
    pub lower: f64,
    /// The bucket's upper bound (`+Inf` for the last bucket).
    pub upper: f64,
}

impl Quantile {
    /// The most the estimate can be off: the bucket's width (`+Inf` when unbounded).
    pub fn error(&self) -> f64 {
        self.upper - self.lower
    }
}

/// Σ per `le` (cumulative counts), `_sum` and `_count` of a histogram family in `e`.
fn histogram_totals(e: &Exposition, family: &str) -> (BTreeMap<u64, (f64, f64)>, f64, f64) {
    let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let (mut sum, mut count) = (0.0, 0.0);
    if let Some(f) = e.family(family) {
        for s in &f.samples {
            if let Some(le) = s.name.strip_suffix("_bucket").and(s.label("le")) {
                if let Some(le) = super::prom::float(le).filter(|v| !v.is_nan()) {
                    // Ordered by the bound's bits made monotonic for non-negative floats.
                    let entry = buckets.entry(ordered(le)).or_insert((le, 0.0));
                    entry.1 += s.value;
                }
            } else if s.name.ends_with("_sum") {
                sum += s.value;
            } else if s.name.ends_with("_count") {
                count += s.value;
            }
        }
    }
    (buckets, sum, count)
}

/// A sort key for bucket bounds (any sign).
fn ordered(v: f64) -> u64 {
    let bits = v.to_bits();
    if v.is_sign_negative() {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The histogram deltas of every histogram family in `last`.
pub fn histogram_deltas(first: &Exposition, last: &Exposition) -> Vec<HistogramDelta> {
    last.families
        .iter()
        .filter(|f| f.kind == Kind::Histogram)
        .map(|f| {
            let (end, end_sum, end_count) = histogram_totals(last, &f.name);
            let (begin, begin_sum, begin_count) = histogram_totals(first, &f.name);
            let reset = end_count < begin_count;
            let buckets = end
                .iter()
                .map(|(k, (le, v))| {
                    let b = if reset {
                        0.0
                    } else {
                        begin.get(k).map_or(0.0, |x| x.1)
                    };
                    (*le, (v - b).max(0.0))
                })
                .collect();
            let (bs, bc) = if reset {
                (0.0, 0.0)
            } else {
                (begin_sum, begin_count)
            };
            HistogramDelta {
                family: f.name.clone(),
                buckets,
                sum: end_sum - bs,
                count: end_count - bc,
            }
        })
        .collect()
}

impl HistogramDelta {
    /// The mean observation (`Δsum / Δcount`), exact; `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// Quantile `q` (0–1) as `histogram_quantile` estimates it; `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<Quantile> {
        let total = self.buckets.last().map_or(0.0, |b| b.1);
        if total <= 0.0 {
            return None;
        }
        if self.sum == 0.0 && self.buckets.first().is_some_and(|b| b.0 >= 0.0) {
            // Non-negative observations summing to 0 are all 0 (e.g. a queue time when nothing queued).
            return Some(Quantile {
                value: 0.0,
                lower: 0.0,
                upper: 0.0,
            });
        }
        let rank = q.clamp(0.0, 1.0) * total;
        let (mut lower, mut below) = (0.0f64, 0.0f64);
        for &(le, cumulative) in &self.buckets {
            if cumulative >= rank && cumulative > below {
                if le.is_infinite() {
                    return Some(Quantile {
                        value: lower,
                        lower,
                        upper: f64::INFINITY,
                    });
                }
                let lower = if le <= 0.0 { le } else { lower.min(le) };
                let value = lower + (le - lower) * ((rank - below) / (cumulative - below));
                return Some(Quantile {
                    value,
                    lower,
                    upper: le,
                });
            }
            lower = le;
            below = cumulative;
        }
        None
    }
}

/// Statistics of one gauge series over every scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeStats {
    /// Mean of the scraped values.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Last scraped.
    pub last: f64,
    /// Scrapes it was seen in.
    pub samples: usize,
}

/// Statistics of `points` (`(t_s, value)`), NaNs skipped.
pub fn gauge_stats(points: &[(f64, f64)]) -> Option<GaugeStats> {
    let values: Vec<f64> = points.iter().map(|p| p.1).filter(|v| !v.is_nan()).collect();
    let last = *values.last()?;
    Some(GaugeStats {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        last,
        samples: values.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::prom::parse;
    use super::*;

    #[test]
    fn counter_deltas_per_series_new_series_and_resets() {
        let a = parse("# TYPE c counter\nc{x=\"1\"} 10\nc{x=\"2\"} 50\n").unwrap();
        let b = parse("# TYPE c counter\nc{x=\"1\"} 15\nc{x=\"2\"} 4\nc{x=\"3\"} 7\n").unwrap();
        let d = counter_deltas(&a, &b);
        assert_eq!(d.len(), 1);
        let deltas: Vec<f64> = d[0].series.iter().map(|s| s.delta).collect();
        assert_eq!(deltas, [5.0, 4.0, 7.0]);
        assert_eq!(d[0].delta, 16.0);
    }

    #[test]
    fn histogram_quantiles_interpolate_inside_the_bucket() {
        let a = parse("# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"0.2\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.05\nh_count 1\n").unwrap();
        let b = parse("# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"0.2\"} 11\nh_bucket{le=\"+Inf\"} 12\nh_sum 2.55\nh_count 12\n").unwrap();
        let h = &histogram_deltas(&a, &b)[0];
        assert_eq!(
            h.buckets,
            vec![(0.1, 0.0), (0.2, 10.0), (f64::INFINITY, 11.0)]
        );
        assert_eq!(h.count, 11.0);
        assert!((h.mean().unwrap() - 2.5 / 11.0).abs() < 1e-12);
        let p50 = h.quantile(0.5).unwrap();
        assert_eq!((p50.lower, p50.upper), (0.1, 0.2));
        assert!((p50.value - (0.1 + 0.1 * 5.5 / 10.0)).abs() < 1e-12);
        assert!((p50.error() - 0.1).abs() < 1e-12);
        let p99 = h.quantile(0.99).unwrap();
        assert_eq!(p99.value, 0.2);
        assert!(p99.error().is_infinite());
        let zeros = parse("# TYPE h histogram\nh_bucket{le=\"0.1\"} 4\nh_bucket{le=\"+Inf\"} 4\nh_sum 0\nh_count 4\n").unwrap();
        let z = &histogram_deltas(&parse("# TYPE h histogram\nh_bucket{le=\"0.1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n").unwrap(), &zeros)[0];
        assert_eq!(
            z.quantile(0.99).unwrap(),
            Quantile {
                value: 0.0,
                lower: 0.0,
                upper: 0.0
            }
        );
        let empty = &histogram_deltas(&a, &a)[0];
        assert_eq!(empty.quantile(0.5), None);
        assert_eq!(empty.mean(), None);
    }

    #[test]
    fn gauge_stats_skip_nan() {
        let g = gauge_stats(&[(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)]).unwrap();
        assert_eq!(
            (g.mean, g.min, g.max, g.last, g.samples),
            (2.0, 1.0, 3.0, 3.0, 2)
        );
        assert!(gauge_stats(&[]).is_none());
    }
}
