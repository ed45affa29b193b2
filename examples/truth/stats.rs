//! Small statistics (mean and nearest-rank percentiles) and a plain-text table whose cells are the median
//! over repeated measurements.

/// Mean, p50, p99 and max of a sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dist {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The distribution of `values` (NaN everywhere when empty).
pub fn dist(mut values: Vec<f64>) -> Dist {
    if values.is_empty() {
        return Dist {
            mean: f64::NAN,
            p50: f64::NAN,
            p99: f64::NAN,
            max: f64::NAN,
        };
    }
    values.sort_by(f64::total_cmp);
    Dist {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        p50: pct(&values, 50.0),
        p99: pct(&values, 99.0),
        max: *values.last().expect("non-empty"),
    }
}

/// The median of `values` (NaN when empty).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| !v.is_nan());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// A table of numbers: one row per label, each cell the median over the repeats given for that row.
pub struct Table {
    pub title: String,
    pub headers: Vec<&'static str>,
    /// Decimals per column.
    pub decimals: Vec<usize>,
    rows: Vec<(String, Vec<Vec<f64>>)>,
}

impl Table {
    pub fn new(title: &str, headers: &[&'static str], decimals: &[usize]) -> Table {
        assert_eq!(headers.len(), decimals.len() + 1);
        Table {
            title: title.to_string(),
            headers: headers.to_vec(),
            decimals: decimals.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds one measurement (one value per numeric column) for the row `label`.
    pub fn add(&mut self, label: &str, values: Vec<f64>) {
        assert_eq!(values.len(), self.decimals.len());
        match self.rows.iter_mut().find(|(l, _)| l == label) {
            Some((_, repeats)) => repeats.push(values),
            None => self.rows.push((label.to_string(), vec![values])),
        }
    }

    /// The table as text: medians over repeats, right-aligned, Markdown pipes.
    pub fn render(&self) -> String {
        let mut cells: Vec<Vec<String>> =
            vec![self.headers.iter().map(|h| h.to_string()).collect()];
        for (label, repeats) in &self.rows {
            let mut row = vec![label.clone()];
            for (c, decimals) in self.decimals.iter().enumerate() {
                let v = median(repeats.iter().map(|r| r[c]).collect());
                row.push(if v.is_nan() {
                    "—".to_string()
                } else {
                    format!("{v:.decimals$}")
                });
            }
            cells.push(row);
        }
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                cells
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let parts: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (s, w))| {
                    if i == 0 {
                        format!("{s:<w$}")
                    } else {
                        format!("{s:>w$}")
                    }
                })
                .collect();
            format!("| {} |", parts.join(" | "))
        };
        let mut out = format!("{}\n\n", self.title);
        out.push_str(&line(&cells[0]));
        out.push('\n');
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    format!(":{}", "-".repeat(w + 1))
                } else {
                    format!("{}:", "-".repeat(w + 1))
                }
            })
            .collect();
        out.push_str(&format!("|{}|\n", rule.join("|")));
        for row in &cells[1..] {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}
