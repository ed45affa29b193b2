//! Values that must never reach a file or a log: API keys and secret request headers, and which header
//! names count as secret. Their `Debug` prints a mask, so a `{:?}` of the flags or the run plan (in a log
//! line, a panic message, a test failure) cannot leak them; the real value is read only where it is sent.

use std::convert::Infallible;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

/// What is printed instead of a secret.
pub const MASK: &str = "**********";

/// Header names whose values are secrets (masked in every file and log).
pub fn is_secret_header(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "authorization" | "proxy-authorization" | "x-api-key" | "x-auth-token" | "api-key"
    )
}

/// A secret string (`--api-key`, `--wandb-api-key`, `--swanlab-api-key`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl FromStr for Secret {
    type Err = Infallible;
    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(Secret(s.to_string()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{MASK:?}")
    }
}

/// The headers sent with every request, in order; `Debug` masks the values of secret ones
/// ([`is_secret_header`]).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// Headers from `(name, value)` pairs.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Headers(pairs)
    }
}

impl Deref for Headers {
    type Target = [(String, String)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if is_secret_header(k) {
                    MASK
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_recognised() {
        assert!(is_secret_header("Authorization"));
        assert!(is_secret_header("x-api-key"));
        assert!(!is_secret_header("X-Team"));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key: Secret = "sk-live-123".parse().unwrap();
        assert_eq!(key.expose(), "sk-live-123");
        assert!(!format!("{key:?}").contains("sk-live"));
        let h = Headers::new(vec![
            ("X-Team".into(), "infra".into()),
            ("Authorization".into(), "Bearer sk-live-123".into()),
        ]);
        let shown = format!("{h:?}");
        assert!(shown.contains("infra") && shown.contains(MASK), "{shown}");
        assert!(!shown.contains("sk-live"), "{shown}");
        assert_eq!(h.len(), 2);
    }
}
