//! `benchmark_percentile.json`: nearest-rank percentiles over the 11 evalscope labels, and the table's
//! exact JSON text (spec §4.2, §5.2).

use serde_json::{Map, Value};

use super::spill::SortedSpill;
use crate::pyjson::{self, PyFormatter};

/// The row labels, in order (`min` = p0, `max` = p100).
pub const PERCENTILE_LABELS: [&str; 11] = [
    "min", "1%", "5%", "10%", "25%", "50%", "75%", "90%", "95%", "99%", "max",
];

/// The percentile (0..=100) behind each label of [`PERCENTILE_LABELS`].
pub const PERCENTILES: [u32; 11] = [0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100];

/// Columns of percentile values: `(column key, one value per label)`, in evalscope's column order
/// (`Latency (s)`, `TTFT (ms)`, `ITL (ms)`, `TPOT (ms)`, `Input tokens`, `Output tokens`, `Output (tok/s)`,
/// `Total (tok/s)`, `Decode (tok/s)` for LLM runs). Values are `round(v, 4)`; NaN where a column is empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PercentileTable {
    /// `(key, values)` per column.
    pub columns: Vec<(String, [f64; 11])>,
}

impl PercentileTable {
    /// The values of column `key` (one per label of [`PERCENTILE_LABELS`]), if the table has it.
    pub fn column(&self, key: &str) -> Option<&[f64; 11]> {
        self.columns
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, values)| values)
    }

    /// The exact text of `benchmark_percentile.json`: a list of 11 row objects, `"Percentiles"` label
    /// first, then every column; floats in Python `repr` (`512.0`), empty columns as bare `NaN`; indent 4,
    /// no trailing newline (`json.dump(indent=4, ensure_ascii=False)`).
    pub fn to_json_string(&self) -> String {
        let rows: Vec<Value> = PERCENTILE_LABELS
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let mut row = Map::new();
                row.insert("Percentiles".to_string(), Value::from(*label));
                for (key, values) in &self.columns {
                    // A non-finite float becomes `Value::Null`, which `nan_for_null` writes as `NaN`.
                    row.insert(key.clone(), Value::from(values[i]));
                }
                Value::Object(row)
            })
            .collect();
        pyjson::to_string_with(&rows, PyFormatter::indent4().nan_for_null())
    }
}

/// Nearest-rank percentile of ascending `sorted` values (evalscope `utils/db_util.py`): `p >= 100` gives
/// the last value, otherwise index `max(0, ceil(n * p / 100) - 1)`; an empty slice gives NaN.
pub fn nearest_rank(sorted: &[f64], p: u32) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if p >= 100 {
        return sorted[n - 1];
    }
    // ceil(n * p / 100) on integers: exact, and equal to Python's float ceil for any realistic n.
    let rank = (n * p as usize).div_ceil(100);
    sorted[rank.saturating_sub(1)]
}

/// One column of the table: NaNs dropped, the rest sorted ascending (stably), each label's nearest-rank
/// value rounded with Python's `round(v, 4)`.
pub(crate) fn percentile_column(values: &SortedSpill) -> [f64; 11] {
    values.percentiles().map(|v| pyjson::round(v, 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_single_value() {
        for p in PERCENTILES {
            assert_eq!(nearest_rank(&[7.5], p), 7.5);
        }
    }

    #[test]
    fn nearest_rank_four_values_by_hand() {
        let v = [10.0, 20.0, 30.0, 40.0];
        // p0: ceil(0) - 1 = -1 → clamped to 0.
        assert_eq!(nearest_rank(&v, 0), 10.0);
        // p1: ceil(4*1/100 = 0.04) = 1 → index 0.
        assert_eq!(nearest_rank(&v, 1), 10.0);
        // p25: ceil(1.0) = 1 → index 0.
        assert_eq!(nearest_rank(&v, 25), 10.0);
        // p50: ceil(2.0) = 2 → index 1.
        assert_eq!(nearest_rank(&v, 50), 20.0);
        // p75: ceil(3.0) = 3 → index 2.
        assert_eq!(nearest_rank(&v, 75), 30.0);
        // p99: ceil(3.96) = 4 → index 3.
        assert_eq!(nearest_rank(&v, 99), 40.0);
        assert_eq!(nearest_rank(&v, 100), 40.0);
        assert_eq!(nearest_rank(&v, 150), 40.0);
    }

    #[test]
    fn nearest_rank_boundaries() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        // 200 * 5 / 100 = 10 exactly → index 9.
        assert_eq!(nearest_rank(&v, 5), 10.0);
        // 200 * 99 / 100 = 198 → index 197.
        assert_eq!(nearest_rank(&v, 99), 198.0);
        let v: Vec<f64> = (1..=7).map(f64::from).collect();
        // 7 * 50 / 100 = 3.5 → ceil 4 → index 3.
        assert_eq!(nearest_rank(&v, 50), 4.0);
    }

    #[test]
    fn nearest_rank_empty_is_nan() {
        assert!(nearest_rank(&[], 0).is_nan());
        assert!(nearest_rank(&[], 50).is_nan());
        assert!(nearest_rank(&[], 100).is_nan());
    }

    #[test]
    fn column_drops_nan_sorts_and_rounds() {
        let column = |values: &[f64]| {
            let mut s = SortedSpill::new(2, None);
            values.iter().for_each(|&v| s.push(v));
            percentile_column(&s)
        };
        let col = column(&[3.00004, f64::NAN, 1.23456, 2.0]);
        assert_eq!(col[0], 1.2346);
        assert_eq!(col[5], 2.0); // 3 values: ceil(1.5) = 2 → index 1
        assert_eq!(col[10], 3.0);
        assert!(column(&[f64::NAN]).iter().all(|v| v.is_nan()));
    }

    #[test]
    fn json_text_has_label_first_floats_and_nan() {
        let table = PercentileTable {
            columns: vec![
                ("Input tokens".to_string(), [512.0; 11]),
                ("ITL (ms)".to_string(), [f64::NAN; 11]),
            ],
        };
        let text = table.to_json_string();
        assert!(text.starts_with(
            "[\n    {\n        \"Percentiles\": \"min\",\n        \"Input tokens\": 512.0,\n        \"ITL (ms)\": NaN\n    },\n"
        ));
        assert!(text.ends_with("\"Percentiles\": \"max\",\n        \"Input tokens\": 512.0,\n        \"ITL (ms)\": NaN\n    }\n]"));
        assert_eq!(text.matches("\"Percentiles\"").count(), 11);
        assert_eq!(table.column("Input tokens"), Some(&[512.0; 11]));
        assert!(table.column("TTFT (ms)").is_none());
    }
}
