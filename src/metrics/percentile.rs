//! `benchmark_percentile.json`: nearest-rank percentiles over the 11 evalscope labels.

/// The row labels, in order (`min` = p0, `max` = p100).
pub const PERCENTILE_LABELS: [&str; 11] = [
    "min", "1%", "5%", "10%", "25%", "50%", "75%", "90%", "95%", "99%", "max",
];

/// Columns of percentile values: `(column key, one value per label)`, in evalscope's column order
/// (`Latency (s)`, `TTFT (ms)`, `ITL (ms)`, `TPOT (ms)`, `Input tokens`, `Output tokens`, `Output (tok/s)`,
/// `Total (tok/s)`, `Decode (tok/s)` for LLM runs). Values are `round(v, 4)`; NaN where a column is empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PercentileTable {
    /// `(key, values)` per column.
    pub columns: Vec<(String, [f64; 11])>,
}

/// Nearest-rank percentile of ascending `sorted` values (evalscope `utils/db_util.py`).
pub fn nearest_rank(sorted: &[f64], p: u32) -> f64 {
    let _ = (sorted, p);
    f64::NAN
}
