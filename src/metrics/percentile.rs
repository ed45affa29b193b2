//! The percentile file: nearest-rank percentiles over the 11 evalscope labels, and the table's
//! exact JSON text (spec §4.2, §5.2).

use serde_json::{Map, Value};

use super::nearest_rank::PERCENTILE_LABELS;
use super::spill::SortedSpill;
use crate::pyjson::{self, PyFormatter};

/// The percentile table's column keys, as evalscope spells them (look columns up by these, never by a
/// literal, so a typo does not compile).
pub mod columns {
    /// `Latency (s)`.
    pub const LATENCY_S: &str = "Latency (s)";
    /// `TTFT (ms)`.
    pub const TTFT_MS: &str = "TTFT (ms)";
    /// `ITL (ms)`.
    pub const ITL_MS: &str = "ITL (ms)";
    /// `TPOT (ms)`.
    pub const TPOT_MS: &str = "TPOT (ms)";
    /// `Input tokens`.
    pub const INPUT_TOKENS: &str = "Input tokens";
    /// `Output tokens`.
    pub const OUTPUT_TOKENS: &str = "Output tokens";
    /// `Input (tok/s)` (embedding and rerank runs).
    pub const INPUT_TPS: &str = "Input (tok/s)";
    /// `Output (tok/s)`.
    pub const OUTPUT_TPS: &str = "Output (tok/s)";
    /// `Total (tok/s)`.
    pub const TOTAL_TPS: &str = "Total (tok/s)";
    /// `Decode (tok/s)`.
    pub const DECODE_TPS: &str = "Decode (tok/s)";
}

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

    /// The exact text of the percentile file: a list of 11 row objects, `"Percentiles"` label
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

/// One column of the table: NaNs dropped, the rest sorted ascending (stably), each label's nearest-rank
/// value rounded with Python's `round(v, 4)`.
pub(crate) fn percentile_column(values: &SortedSpill) -> [f64; 11] {
    values.percentiles().map(|v| pyjson::round(v, 4))
}

#[cfg(test)]
mod tests {
    use super::*;

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
