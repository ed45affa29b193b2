//! `--fail-on METRIC:±THRESHOLD`: a regression gate. The sign is the bad direction (`p99_ttft:+10%`: an
//! increase of more than 10 % fails; `rps:-5%`: a drop of more than 5 % fails); the threshold is relative
//! (`%`) or, for a latency, absolute (`ms`, or `s`). A gate fails only when the metric's whole interval lies
//! beyond the threshold; a metric without an interval is inconclusive (a failure only with `--strict`).

use std::fmt;

use super::metric::Metric;
use super::verdict::MetricResult;

/// The bad direction of a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `+`: an increase is bad.
    Up,
    /// `-`: a decrease is bad.
    Down,
}

/// How far the metric may move in the bad direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fraction of the base value (0.1 for `10%`).
    Relative(f64),
    /// An amount in the metric's unit (ms for TTFT/TPOT/ITL, s for latency).
    Absolute(f64),
}

/// One `--fail-on`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The metric.
    pub metric: Metric,
    /// The bad direction.
    pub direction: Direction,
    /// The allowed move.
    pub threshold: Threshold,
    /// As typed.
    pub spec: String,
}

/// A gate's outcome at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The interval does not lie wholly beyond the threshold.
    Pass,
    /// The interval lies wholly beyond the threshold.
    Fail,
    /// The metric has no interval (or no value) here.
    Inconclusive,
}

impl Gate {
    /// Parses `METRIC:±N%` / `METRIC:±Nms` / `METRIC:±Ns`; the error says what is wrong (the caller names
    /// the flag).
    pub fn parse(spec: &str) -> Result<Gate, String> {
        let (name, threshold) = spec
            .split_once(':')
            .ok_or_else(|| format!("'{spec}': expected METRIC:±THRESHOLD, e.g. p99_ttft:+10%"))?;
        let metric = Metric::parse(name.trim()).ok_or_else(|| {
            format!(
                "'{spec}': unknown metric '{}'; use {}",
                name.trim(),
                Metric::names_help()
            )
        })?;
        let t = threshold.trim();
        let (direction, rest) = if let Some(r) = t.strip_prefix('+') {
            (Direction::Up, r)
        } else if let Some(r) = t.strip_prefix(['-', '−']) {
            (Direction::Down, r)
        } else {
            return Err(format!(
                "'{spec}': the threshold '{t}' needs a sign, the bad direction: +{t} (an increase fails) or -{t} (a decrease fails)"
            ));
        };
        let unit = metric.quantity.unit();
        let (number, threshold) = if let Some(n) = rest.strip_suffix('%') {
            (n, Threshold::Relative(1.0))
        } else if let Some(n) = rest.strip_suffix("ms") {
            (n, Threshold::Absolute(if unit == "s" { 1e-3 } else { 1.0 }))
        } else if let Some(n) = rest.strip_suffix('s') {
            (n, Threshold::Absolute(if unit == "s" { 1.0 } else { 1e3 }))
        } else {
            return Err(format!(
                "'{spec}': malformed threshold '{t}': write a percentage (+10%) or, for a latency, a time (+20ms)"
            ));
        };
        let value: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!("'{spec}': malformed threshold '{t}': '{number}' is not a number ≥ 0")
            })?;
        let threshold = match threshold {
            Threshold::Relative(_) => Threshold::Relative(value / 100.0),
            Threshold::Absolute(scale) if !metric.quantity.is_run_level() => {
                Threshold::Absolute(value * scale)
            }
            Threshold::Absolute(_) => {
                return Err(format!(
                    "'{spec}': {metric} takes a relative threshold (e.g. {metric}:-5%), not a time"
                ))
            }
        };
        Ok(Gate {
            metric,
            direction,
            threshold,
            spec: spec.to_string(),
        })
    }

    /// The outcome for `result` (the same metric at one point).
    pub fn judge(&self, result: &MetricResult) -> Outcome {
        let change = match self.threshold {
            Threshold::Relative(_) => result.changes.relative,
            Threshold::Absolute(_) => result.changes.absolute,
        };
        let Some(i) = change.interval else {
            return Outcome::Inconclusive;
        };
        let limit = match self.threshold {
            Threshold::Relative(v) | Threshold::Absolute(v) => v,
        };
        let beyond = match self.direction {
            Direction::Up => i.low > limit,
            Direction::Down => i.high < -limit,
        };
        if beyond {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::Inconclusive => "inconclusive",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::verdict::{Method, Verdict};
    use crate::stats::{Change, Changes, Interval};

    fn result(metric: &str, rel: (f64, f64), abs: (f64, f64)) -> MetricResult {
        let c = |(low, high): (f64, f64)| Change {
            point: (low + high) / 2.0,
            interval: Some(Interval { low, high }),
        };
        MetricResult {
            metric: Metric::parse(metric).unwrap(),
            base: Some(1.0),
            new: Some(1.0),
            changes: Changes {
                relative: c(rel),
                absolute: c(abs),
            },
            method: Method::Rows,
            verdict: Verdict::NoSignificantChange,
            note: None,
        }
    }

    #[test]
    fn specs_parse_in_the_metrics_unit() {
        let g = Gate::parse("p99_ttft:+10%").unwrap();
        assert_eq!(
            (g.direction, g.threshold),
            (Direction::Up, Threshold::Relative(0.1))
        );
        assert_eq!(
            Gate::parse("avg_latency:+200ms").unwrap().threshold,
            Threshold::Absolute(0.2)
        );
        assert_eq!(
            Gate::parse("p99_itl:+0.5s").unwrap().threshold,
            Threshold::Absolute(500.0)
        );
        assert_eq!(Gate::parse("rps:-5%").unwrap().direction, Direction::Down);
        for (bad, needle) in [
            ("p98_ttft:+10%", "unknown metric 'p98_ttft'"),
            ("p99_ttft", "expected METRIC:±THRESHOLD"),
            ("p99_ttft:10%", "needs a sign"),
            ("p99_ttft:+10", "malformed threshold"),
            ("p99_ttft:+x%", "not a number"),
            ("rps:-2s", "relative threshold"),
        ] {
            let err = Gate::parse(bad).unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn a_gate_fails_only_when_the_whole_interval_is_beyond() {
        let up = Gate::parse("p99_ttft:+10%").unwrap();
        assert_eq!(
            up.judge(&result("p99_ttft", (0.11, 0.3), (0.0, 1.0))),
            Outcome::Fail
        );
        assert_eq!(
            up.judge(&result("p99_ttft", (0.09, 0.3), (0.0, 1.0))),
            Outcome::Pass
        );
        let down = Gate::parse("rps:-5%").unwrap();
        assert_eq!(
            down.judge(&result("rps", (-0.2, -0.06), (0.0, 1.0))),
            Outcome::Fail
        );
        assert_eq!(
            down.judge(&result("rps", (-0.2, -0.04), (0.0, 1.0))),
            Outcome::Pass
        );
        let abs = Gate::parse("avg_ttft:+20ms").unwrap();
        assert_eq!(
            abs.judge(&result("avg_ttft", (0.0, 0.1), (21.0, 30.0))),
            Outcome::Fail
        );
        let mut none = result("rps", (0.0, 0.0), (0.0, 0.0));
        none.changes.relative.interval = None;
        assert_eq!(down.judge(&none), Outcome::Inconclusive);
    }
}
