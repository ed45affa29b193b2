//! Why an endpoint cannot be set up before its first request: the URL (scheme, host, port), the proxy
//! named by the environment, or the TLS client. Messages are the CLI's text (the client prefixes the
//! `--url`); no variant has a `#[source]`, each message already holding its cause.

/// Why [`super::http1::Endpoint::new`] (with [`super::proxy::for_url`] and the TLS client) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The URL's scheme is neither http nor https.
    #[error("unsupported URL scheme {0:?} (use http or https)")]
    Scheme(String),
    /// The URL has no host.
    #[error("{0} has no host")]
    NoHost(String),
    /// The URL has no port and its scheme no default one.
    #[error("{0} has no port")]
    NoPort(String),
    /// A proxy variable's value is not a URL.
    #[error("{variable}: not a proxy URL ({reason}); expected e.g. http://proxy.example:3128")]
    ProxyUrl {
        /// The environment variable (`HTTP_PROXY`, `https_proxy`, …).
        variable: String,
        /// The URL parser's reason.
        reason: String,
    },
    /// A proxy variable's URL has no host.
    #[error("{0}: the proxy URL has no host")]
    ProxyHost(String),
    /// The PEM file named by `SSL_CERT_FILE` cannot be read or holds a bad certificate.
    #[error("SSL_CERT_FILE {path}: {reason}")]
    CertFile {
        /// The file as named.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// The TLS library refused its configuration.
    #[error("TLS setup: {0}")]
    Tls(String),
    /// The host cannot be a TLS server name.
    #[error("{host} is not a valid TLS server name: {reason}")]
    ServerName {
        /// The URL's host.
        host: String,
        /// The TLS library's reason.
        reason: String,
    },
}
