//! A small HTTP/1.1 client for one endpoint, built for the load engine's hot path.
//!
//! One task per request does everything on its own connection: writes the request (head prebuilt once per
//! endpoint, one `write` per request), reads the socket, stamps the time of each read *before* any parsing,
//! and decodes the body in place — no connection task, no channel between reader and parser, no URL or
//! header map work per request, no allocation per body chunk. Connections are kept alive and reused
//! through a pool as large as the run's concurrency.
//!
//! Scope: `POST` with a `Content-Length` body; responses with `Content-Length`, `chunked` or close-delimited
//! bodies; `1xx` heads skipped; keep-alive per HTTP/1.1 (and `Connection: keep-alive` for HTTP/1.0);
//! `http://` and `https://` (rustls). Redirects are not followed (a 3xx is a failed request showing its
//! status). Proxies from the environment ([`super::proxy`]) are used as evalscope's aiohttp uses them:
//! `http://` requests in absolute form to the proxy, `https://` through a `CONNECT` tunnel.

mod decode;
mod pool;
mod stream;

use std::io;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::hooks::Hooks;
use super::setup_error::SetupError;
pub use decode::{parse_head, BodyDecoder, Framing, Head, ProtocolError};
pub use pool::Pool;
pub use stream::ConnectError;
use stream::{Stream, Tls};

use crate::record::ConnMarks;

/// First size of a connection's read buffer (it grows for long lines or big bodies).
const READ_BUF_BYTES: usize = 4096;

/// Largest response head accepted.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Where requests go and the bytes every request starts with.
pub struct Endpoint {
    host: String,
    port: u16,
    tls: Option<Tls>,
    /// `POST /path HTTP/1.1\r\nHost: …\r\n<headers>\r\nContent-Length: ` — the length and body follow.
    head_prefix: Vec<u8>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    /// `host:port` for messages.
    authority: String,
    /// Test hooks (nothing without the `test-hooks` feature).
    hooks: Hooks,
    /// The proxy from the environment, if the endpoint is reached through one.
    proxy: Option<super::proxy::Proxy>,
}

impl Endpoint {
    /// An endpoint for `url` sending `headers` (name, value; already validated) on every request.
    pub fn new(
        url: &reqwest::Url,
        headers: &[(String, String)],
        connect_timeout: Option<Duration>,
        read_timeout: Option<Duration>,
    ) -> Result<Endpoint, SetupError> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(SetupError::Scheme(other.to_string())),
        };
        let host = match url.host_str() {
            // IPv6 literals come bracketed.
            Some(h) => h.trim_start_matches('[').trim_end_matches(']').to_string(),
            None => return Err(SetupError::NoHost(url.to_string())),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| SetupError::NoPort(url.to_string()))?;
        let host_header = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => host.clone(),
        };
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let absolute_prefix = format!("http://{host_header}");
        let mut lines: Vec<(String, String)> = vec![
            ("Host".into(), host_header),
            ("Content-Type".into(), "application/json".into()),
            (
                "User-Agent".into(),
                concat!("llmperf/", env!("CARGO_PKG_VERSION")).into(),
            ),
            ("Accept".into(), "*/*".into()),
        ];
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                continue;
            }
            match lines.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some(line) => *line = (name.clone(), value.clone()),
                None => lines.push((name.clone(), value.clone())),
            }
        }
        let proxy = super::proxy::for_url(url, &super::proxy::process_env())?;
        if let Some(p) = &proxy {
            super::proxy::warn_once(p, &format!("{host}:{port}"));
            if !tls {
                // Absolute form: the proxy reads the target from the request line.
                path = format!("{absolute_prefix}{path}");
                if let Some(auth) = &p.authorization {
                    lines.push(("Proxy-Authorization".into(), auth.clone()));
                }
            }
        }
        let mut head_prefix = format!("POST {path} HTTP/1.1\r\n").into_bytes();
        for (name, value) in &lines {
            head_prefix.extend_from_slice(name.as_bytes());
            head_prefix.extend_from_slice(b": ");
            head_prefix.extend_from_slice(value.as_bytes());
            head_prefix.extend_from_slice(b"\r\n");
        }
        head_prefix.extend_from_slice(b"Content-Length: ");
        let tls = if tls { Some(Tls::new(&host)?) } else { None };
        Ok(Endpoint {
            authority: format!("{host}:{port}"),
            host,
            port,
            tls,
            head_prefix,
            connect_timeout,
            read_timeout,
            hooks: Hooks::from_env(),
            proxy,
        })
    }

    /// Where connections go, for messages: `host:port`, or `host:port via proxy P:Q`.
    pub fn route(&self) -> String {
        match &self.proxy {
            Some(p) => format!("{} via proxy {}", self.authority, p.authority()),
            None => self.authority.clone(),
        }
    }
}

/// Why an exchange failed.
#[derive(Debug)]
pub enum Error {
    /// No connection could be made.
    Connect(ConnectError),
    /// `--read-timeout` passed between two reads.
    ReadTimeout(Duration),
    /// The connection failed while writing or reading.
    Io(io::Error),
    /// The server closed the connection before the response was complete.
    Closed,
    /// The response was not valid HTTP/1.1.
    Protocol(ProtocolError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Connect(ConnectError::Io(e)) => write!(f, "connect error: {e}"),
            Error::Connect(ConnectError::Timeout(t)) => {
                write!(
                    f,
                    "connect timeout after {} s (--connect-timeout)",
                    t.as_secs_f64()
                )
            }
            Error::ReadTimeout(t) => {
                write!(f, "no data for {} s (--read-timeout)", t.as_secs_f64())
            }
            Error::Io(e) => write!(f, "connection error: {e}"),
            Error::Closed => write!(
                f,
                "connection closed by the server before the response was complete"
            ),
            Error::Protocol(e) => write!(f, "invalid HTTP response: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connect(ConnectError::Io(e)) | Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// One kept-alive connection with its buffers.
pub struct Conn {
    stream: Stream,
    /// Read buffer: `buf[start..end]` holds bytes read but not yet used.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// When the bytes of the most recent read arrived (kernel stamp), or else when the read returned.
    last_read: Instant,
    /// Request bytes (reused).
    out: Vec<u8>,
    /// Response bytes have been read on this connection for the current request.
    got_bytes: bool,
    /// The current request's longest wait between bytes arriving and the client reading them.
    read_lag: Duration,
    /// Test hooks (a delay before every read).
    hooks: Hooks,
    /// When this new connection got past each step, until its first request takes them.
    opened: Option<ConnMarks>,
    /// When the current response's first body byte arrived.
    body_at: Option<Instant>,
}

impl Conn {
    fn new(stream: Stream, hooks: Hooks, opened: ConnMarks) -> Conn {
        Conn {
            stream,
            buf: vec![0; READ_BUF_BYTES],
            start: 0,
            end: 0,
            last_read: Instant::now(),
            out: Vec::new(),
            got_bytes: false,
            read_lag: Duration::ZERO,
            hooks,
            opened: Some(opened),
            body_at: None,
        }
    }

    /// The connection's own phase marks, for its first request only (`None` afterwards).
    pub fn take_opened(&mut self) -> Option<ConnMarks> {
        self.opened.take()
    }

    /// When the bytes of the most recent read arrived (the kernel's stamp, else when the read returned).
    pub fn last_arrival(&self) -> Instant {
        self.last_read
    }

    /// When the current response's first body byte arrived, if one did.
    pub fn body_arrival(&self) -> Option<Instant> {
        self.body_at
    }

    /// Whether the whole prepared request went out with the first `written` bytes.
    pub fn all_written(&self, written: usize) -> bool {
        written >= self.out.len()
    }

    /// Whether any response byte arrived for the current request (a reused connection that fails before
    /// can be retried on a fresh one).
    pub fn got_bytes(&self) -> bool {
        self.got_bytes
    }

    /// The current request's longest wait between bytes arriving (kernel stamp) and the client reading
    /// them; zero where the kernel gives no stamps.
    pub fn read_lag(&self) -> Duration {
        self.read_lag
    }

    /// Writes one request: the endpoint's head, this request's `extra` header lines (each `Name: value\r\n`),
    /// the body's length, the body.
    pub async fn write_request(
        &mut self,
        endpoint: &Endpoint,
        extra: &[u8],
        body: &[u8],
    ) -> Result<(), Error> {
        self.prepare(endpoint, extra, body);
        self.write_rest(0).await
    }

    /// Writes what [`Conn::try_write_now`] left of the prepared request (from byte `written` on).
    pub async fn write_rest(&mut self, written: usize) -> Result<(), Error> {
        if written < self.out.len() {
            self.stream
                .write_all(&self.out[written..])
                .await
                .map_err(Error::Io)?;
        }
        if matches!(self.stream, Stream::Tls(_)) {
            self.stream.flush().await.map_err(Error::Io)?;
        }
        Ok(())
    }

    /// Writes as much of the prepared request as the socket takes right now, from any thread, without
    /// waiting (plain TCP only: `None` for TLS, where the caller writes it all with
    /// [`Conn::write_rest`]). Returns the bytes written.
    pub fn try_write_now(&mut self) -> Option<usize> {
        let Stream::Plain(tcp) = &self.stream else {
            return None;
        };
        let mut written = 0;
        while written < self.out.len() {
            match tcp.try_write(&self.out[written..]) {
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        Some(written)
    }

    /// Builds the request bytes for `body` (the endpoint's head, the `extra` header lines, the length, the
    /// body).
    pub fn prepare(&mut self, endpoint: &Endpoint, extra: &[u8], body: &[u8]) {
        self.got_bytes = false;
        self.read_lag = Duration::ZERO;
        self.body_at = None;
        self.out.clear();
        if extra.is_empty() {
            self.out.extend_from_slice(&endpoint.head_prefix);
        } else {
            const LENGTH: &[u8] = b"Content-Length: ";
            let cut = endpoint.head_prefix.len() - LENGTH.len();
            self.out.extend_from_slice(&endpoint.head_prefix[..cut]);
            self.out.extend_from_slice(extra);
            self.out.extend_from_slice(LENGTH);
        }
        let mut digits = [0u8; 20];
        let mut n = body.len();
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&digits[i..]);
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(body);
    }

    /// Reads more bytes after `end`; returns false at EOF.
    async fn fill(&mut self, read_timeout: Option<Duration>) -> Result<bool, Error> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        // A busy or descheduled client, for the tests: chunks must still be timed at arrival.
        self.hooks.before_read();
        let read = self.stream.read(&mut self.buf[self.end..]);
        let n = match read_timeout {
            None => read.await,
            Some(t) => match tokio::time::timeout(t, read).await {
                Ok(r) => r,
                Err(_) => return Err(Error::ReadTimeout(t)),
            },
        }
        .map_err(Error::Io)?;
        // The kernel's arrival stamp when there is one (never before an earlier read's time).
        let now = Instant::now();
        self.last_read = match self.stream.arrived() {
            Some(at) => {
                self.read_lag = self.read_lag.max(now.saturating_duration_since(at));
                at.max(self.last_read)
            }
            None => now,
        };
        if n == 0 {
            return Ok(false);
        }
        self.got_bytes = true;
        self.end += n;
        Ok(true)
    }

    /// Reads the response head (skipping `1xx` heads).
    pub async fn read_head(&mut self, endpoint: &Endpoint) -> Result<Head, Error> {
        loop {
            if let Some((head, len)) =
                decode::parse_head(&self.buf[self.start..self.end]).map_err(Error::Protocol)?
            {
                self.start += len;
                if (100..200).contains(&head.status) {
                    continue;
                }
                return Ok(head);
            }
            if self.end - self.start > MAX_HEAD_BYTES {
                return Err(Error::Protocol(ProtocolError::HeadTooLarge));
            }
            if !self.fill(endpoint.read_timeout).await? {
                return Err(Error::Closed);
            }
        }
    }

    /// Reads the body framed by `framing`, handing each decoded run of bytes to `on_data` with the time
    /// the read that brought it returned. Returns whether the connection can carry another request.
    pub async fn read_body(
        &mut self,
        endpoint: &Endpoint,
        head: &Head,
        mut on_data: impl FnMut(&[u8], Instant),
    ) -> Result<bool, Error> {
        let mut decoder = BodyDecoder::new(head.framing);
        loop {
            if self.start < self.end {
                let at = self.last_read;
                self.body_at.get_or_insert(at);
                let used = decoder
                    .decode(&self.buf[self.start..self.end], &mut |d| on_data(d, at))
                    .map_err(Error::Protocol)?;
                self.start += used;
            }
            if decoder.is_done() {
                // Bytes beyond this response (a server that pipelines or misbehaves) make reuse unsafe.
                return Ok(head.keep_alive && self.start == self.end);
            }
            if !self.fill(endpoint.read_timeout).await? {
                return if decoder.until_close() {
                    Ok(false)
                } else {
                    Err(Error::Closed)
                };
            }
        }
    }
}
