//! Per-value parsers for flags whose values have structure (`KEY=VALUE`, JSON).

/// One `--headers` item. `Debug` masks the value of a secret header (`Authorization`, `*-key`, …).
#[derive(Clone, PartialEq, Eq)]
pub struct HeaderPair {
    /// Header name, trimmed.
    pub name: String,
    /// Header value, trimmed.
    pub value: String,
    /// The item was not `KEY=VALUE`: `name` then holds only its start (before any `:` or space) and
    /// `value` is empty, so the plan can reject it without echoing a secret typed with the wrong
    /// separator (`Authorization: Bearer sk-…`); clap would echo the whole item.
    pub malformed: bool,
}

impl std::fmt::Debug for HeaderPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = crate::secret::is_secret_header(&self.name);
        f.debug_struct("HeaderPair")
            .field("name", &self.name)
            .field(
                "value",
                &if secret {
                    crate::secret::MASK
                } else {
                    &self.value
                },
            )
            .field("malformed", &self.malformed)
            .finish()
    }
}

/// `KEY=VALUE`, split on the first `=`, both sides trimmed (evalscope's `ParseKVAction`). Never fails: a
/// malformed item is marked and reported by [`crate::plan`].
pub fn parse_header(s: &str) -> Result<HeaderPair, String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok(HeaderPair {
            name: k.trim().to_string(),
            value: v.trim().to_string(),
            malformed: false,
        }),
        _ => Ok(HeaderPair {
            name: s
                .trim()
                .split(|c: char| c == ':' || c == '=' || c.is_whitespace())
                .next()
                .unwrap_or("")
                .chars()
                .take(64)
                .collect(),
            value: String::new(),
            malformed: true,
        }),
    }
}

/// A JSON object (for `--extra-args`), keys kept in the order written.
pub fn parse_json_object(s: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "expected a JSON object like '{{\"ignore_eos\": true}}', got {other}"
        )),
        Err(e) => Err(format!(
            "not valid JSON ({e}); expected e.g. '{{\"ignore_eos\": true}}'"
        )),
    }
}

/// A whole number ≥ 0 (counts, seconds), with an error that says what is expected.
pub fn whole<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("expected a whole number ≥ 0 (e.g. 10), got {s:?}"))
}

/// `KIND[:EVERY]` for `--mock-fault` (the simulator owns the syntax; `serve-mock --fault` uses it too).
pub use crate::sim::fault::parse_fault_rule;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_splits_on_first_equals_and_trims() {
        let h = parse_header(" Authorization = Bearer a=b ").unwrap();
        assert_eq!(h.name, "Authorization");
        assert_eq!(h.value, "Bearer a=b");
        assert!(parse_header("nope").unwrap().malformed);
        let h = parse_header("Authorization: Bearer sk-secret").unwrap();
        assert!(h.malformed && h.name == "Authorization" && h.value.is_empty());
        assert!(parse_header("=v").unwrap().malformed);
    }

    #[test]
    fn json_object_keeps_key_order() {
        let m = parse_json_object(r#"{"z": 1, "a": {"k": [1, 2.5]}}"#).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), vec!["z", "a"]);
        assert!(parse_json_object("[1]").is_err());
        assert!(parse_json_object("{").is_err());
    }
}
