//! The first failure of each kind in a run, with its HTTP status and an excerpt of its error text (the
//! server's body, the transport error): what the console summary, the sweep's text report and the HTML
//! report's Failures section show next to the counts, so a run whose requests all failed says why
//! without opening the run's database.

use std::collections::BTreeMap;

/// Most characters of an error text kept as its excerpt.
pub const EXCERPT_CHARS: usize = 300;

/// The first failed request of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstError {
    /// The failure kind label (`record::FailureKind::label`).
    pub kind: String,
    /// The HTTP status, when a response head arrived.
    pub status: Option<u16>,
    /// The error text, on one line, cut to [`EXCERPT_CHARS`] characters (with `…` when cut).
    pub excerpt: String,
}

impl FirstError {
    /// `HTTP <status>: <excerpt>` (the status only when the excerpt does not already start with it).
    pub fn line(&self) -> String {
        match self.status {
            Some(status) if !self.excerpt.starts_with("HTTP ") => {
                format!("HTTP {status}: {}", self.excerpt)
            }
            _ => self.excerpt.clone(),
        }
    }
}

/// The first failure of each kind, in the order of the kind labels.
#[derive(Debug, Clone, Default)]
pub struct FirstErrors {
    by_kind: BTreeMap<&'static str, FirstError>,
}

impl FirstErrors {
    /// Keeps this failure if it is the first of its kind.
    pub fn note(&mut self, kind: &'static str, status: Option<u16>, error: Option<&str>) {
        self.by_kind.entry(kind).or_insert_with(|| FirstError {
            kind: kind.to_string(),
            status,
            excerpt: excerpt(error.unwrap_or("(no error text)")),
        });
    }

    /// One entry per kind seen, ordered by label.
    pub fn list(&self) -> Vec<FirstError> {
        self.by_kind.values().cloned().collect()
    }
}

/// `text` on one line, cut to [`EXCERPT_CHARS`] characters.
fn excerpt(text: &str) -> String {
    let line = crate::record::one_line(text.trim());
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_of_each_kind_is_kept_with_its_status() {
        let mut e = FirstErrors::default();
        e.note(
            "http_status",
            Some(404),
            Some("HTTP 404 Not Found: no such model"),
        );
        e.note("http_status", Some(500), Some("HTTP 500: later"));
        e.note("malformed", Some(200), Some("invalid JSON\nat byte 3"));
        e.note("connect", None, None);
        let list = e.list();
        assert_eq!(list.len(), 3);
        assert_eq!(list[0].kind, "connect");
        assert_eq!(list[0].line(), "(no error text)");
        assert_eq!(list[1].line(), "HTTP 404 Not Found: no such model");
        assert_eq!(list[2].line(), "HTTP 200: invalid JSON\\nat byte 3");
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        let mut e = FirstErrors::default();
        let long = "é".repeat(EXCERPT_CHARS + 5);
        e.note("reset", None, Some(&long));
        let got = &e.list()[0].excerpt;
        assert_eq!(got.chars().count(), EXCERPT_CHARS + 1);
        assert!(got.ends_with('…'));
    }
}
