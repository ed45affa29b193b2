//! Why one scrape of a `--server-metrics` endpoint failed: recorded as the endpoint's last error (a
//! failed scrape never fails the run).

/// Why one GET of a metrics endpoint gave no exposition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    /// No answer (connection, timeout), the client's reason on one line.
    #[error("{0}")]
    Transport(String),
    /// The endpoint answered with an error status.
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// The body could not be read.
    #[error("reading the body: {0}")]
    Body(String),
    /// The body is over the size limit.
    #[error("body of {0} bytes is too large")]
    TooLarge(usize),
    /// The body is not text.
    #[error("the body is not UTF-8")]
    NotUtf8,
    /// The body is not Prometheus's text format.
    #[error("{0}")]
    Parse(String),
}
