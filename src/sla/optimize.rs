//! The `max`/`min` objective walk of evalscope 1.14.1's `_tune_optimization`: find a bracket around the
//! peak (a valid low-pressure prefix when the start fails; otherwise the local slope, then steps that
//! double while the objective does not get worse, with plateau walks where adjacent values tie), then
//! bisect on adjacent values. Scores are probes' objective values (`None`: a request failed or the
//! metric is missing); every comparison is Python's, `None == None` included.

use anyhow::Result;

use super::tuner::{ProbeRunner, Tuner};
use crate::plan::sla::criterion::Op;

fn improves(val: Option<f64>, best: Option<f64>, op: Op) -> bool {
    match (val, best) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(v), Some(b)) => {
            if op == Op::Max {
                v > b
            } else {
                v < b
            }
        }
    }
}

fn not_worse(candidate: Option<f64>, baseline: Option<f64>, op: Op) -> bool {
    match (candidate, baseline) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(c), Some(b)) => {
            if op == Op::Max {
                c >= b
            } else {
                c <= b
            }
        }
    }
}

fn sorted(a: i64, b: i64) -> (i64, i64) {
    (a.min(b), a.max(b))
}

/// The bracket to bisect (`None`: even the lower bound fails).
pub(crate) async fn bracket<R: ProbeRunner>(
    t: &mut Tuner<'_, R>,
    start: i64,
    metric: &str,
    op: Op,
) -> Result<Option<(i64, i64)>> {
    let (lower, upper) = (t.plan.lower, t.plan.upper);
    let start_score = t.score_of(start, metric).await?;
    let Some(start_score) = start_score else {
        if t.score_of(lower, metric).await?.is_none() {
            return Ok(None);
        }
        let (mut left, mut right) = (lower, start - 1);
        while left < right {
            let mid = (left + right + 1).div_euclid(2);
            if t.score_of(mid, metric).await?.is_some() {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        return Ok(Some((lower, left)));
    };
    let start_score = Some(start_score);
    let left_score = if start > lower {
        t.score_of(start - 1, metric).await?
    } else {
        None
    };
    let right_score = if start < upper {
        t.score_of(start + 1, metric).await?
    } else {
        None
    };
    let direction = if improves(left_score, start_score, op) {
        -1
    } else if improves(right_score, start_score, op) {
        1
    } else {
        plateau_direction(t, start, start_score, metric, op).await?
    };
    if direction == 0 {
        return Ok(Some((start, start)));
    }
    let mut previous = start;
    let mut current = start + direction;
    let mut step: i64 = 1;
    let mut bracket = sorted(previous, current);
    loop {
        let candidate = current + direction * step;
        if !(lower <= candidate && candidate <= upper) {
            let edge = if direction > 0 { upper } else { lower };
            if current != edge {
                t.score_of(edge, metric).await?;
                bracket = sorted(previous, edge);
            }
            return Ok(Some(bracket));
        }
        let candidate_score = t.score_of(candidate, metric).await?;
        let current_score = t.score_of(current, metric).await?;
        if candidate_score == current_score && candidate_score.is_some() {
            let (s, e) = sorted(previous, candidate);
            for value in s + 1..e {
                let v = t.score_of(value, metric).await?;
                if improves(v, candidate_score, op) {
                    return Ok(Some((s, e)));
                }
            }
        }
        if not_worse(candidate_score, current_score, op) {
            previous = current;
            current = candidate;
            bracket = sorted(previous, current);
            step *= 2;
        } else {
            return Ok(Some(sorted(previous, candidate)));
        }
    }
}

/// Equal neighbours reveal no slope: walk both sides of the plateau to pick a direction (0: none).
async fn plateau_direction<R: ProbeRunner>(
    t: &mut Tuner<'_, R>,
    start: i64,
    start_score: Option<f64>,
    metric: &str,
    op: Op,
) -> Result<i64> {
    let (lower, upper) = (t.plan.lower, t.plan.upper);
    let (mut pl, mut pr) = (start, start);
    while pl > lower && t.score_of(pl - 1, metric).await? == start_score {
        pl -= 1;
    }
    while pr < upper && t.score_of(pr + 1, metric).await? == start_score {
        pr += 1;
    }
    if pl > lower && improves(t.score_of(pl - 1, metric).await?, start_score, op) {
        return Ok(-1);
    }
    if pr < upper && improves(t.score_of(pr + 1, metric).await?, start_score, op) {
        return Ok(1);
    }
    Ok(0)
}

/// Bisects `[left, right]` on adjacent values toward the peak.
pub(crate) async fn bisect<R: ProbeRunner>(
    t: &mut Tuner<'_, R>,
    mut left: i64,
    mut right: i64,
    metric: &str,
    op: Op,
) -> Result<()> {
    while left < right {
        let mid = (left + right).div_euclid(2);
        let current = t.score_of(mid, metric).await?;
        let next = t.score_of(mid + 1, metric).await?;
        if current.is_none() {
            if next.is_none() {
                right = mid;
            } else {
                left = mid + 1;
            }
        } else if next.is_none() || not_worse(current, next, op) {
            if next == current {
                let (mut pl, mut pr) = (mid, mid + 1);
                while pl > left && t.score_of(pl - 1, metric).await? == current {
                    pl -= 1;
                }
                while pr < right && t.score_of(pr + 1, metric).await? == current {
                    pr += 1;
                }
                if pl > left && improves(t.score_of(pl - 1, metric).await?, current, op) {
                    right = pl - 1;
                } else if pr < right && improves(t.score_of(pr + 1, metric).await?, current, op) {
                    left = pr + 1;
                } else {
                    left = pl;
                    right = pl;
                }
            } else {
                right = mid;
            }
        } else {
            left = mid + 1;
        }
    }
    Ok(())
}
