//! The byte stream under a connection: plain TCP or TLS (rustls, the Mozilla roots of `webpki-roots` plus
//! any PEM certificates named by `SSL_CERT_FILE`), always with `TCP_NODELAY` (without it a small request or
//! SSE frame can wait for a delayed ACK: +25 ms TTFT measured on loopback), and with the kernel's receive
//! time stamps where the platform has them ([`super::rx_stamp`]).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};

use crate::engine::proxy::Proxy;
use crate::engine::setup_error::SetupError;
use crate::record::ConnMarks;
use crate::sys::rx_stamp;

/// Largest `CONNECT` reply head accepted from a proxy.
const MAX_CONNECT_REPLY_BYTES: usize = 16 * 1024;

/// Opens a `CONNECT` tunnel to `host:port` through the proxy `tcp` is connected to; a reply other than 2xx
/// is an error quoting its status line.
async fn tunnel(tcp: &mut Tcp, host: &str, port: u16, proxy: &Proxy) -> io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = &proxy.authorization {
        request.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes()).await?;
    // Read byte by byte up to the blank line: nothing of the tunnel may be consumed here.
    let mut head = Vec::with_capacity(256);
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > MAX_CONNECT_REPLY_BYTES {
            return Err(io::Error::other(format!(
                "proxy {}: CONNECT reply head too large",
                proxy.authority()
            )));
        }
        let mut byte = [0u8; 1];
        if tcp.read(&mut byte).await? == 0 {
            return Err(io::Error::other(format!(
                "proxy {} closed the connection during CONNECT {target}",
                proxy.authority()
            )));
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let status_line = text.lines().next().unwrap_or("");
    let code = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(200..=299) => Ok(()),
        _ => Err(io::Error::other(format!(
            "proxy {} refused CONNECT {target}: {status_line}",
            proxy.authority()
        ))),
    }
}

/// Plain TCP or TLS over TCP.
pub enum Stream {
    /// `http://`.
    Plain(Tcp),
    /// `https://`.
    Tls(Box<TlsStream<Tcp>>),
}

impl Stream {
    /// When the bytes of the last read from the socket arrived (the kernel's stamp), if known. Under TLS,
    /// the last read of encrypted bytes: decrypted data handed out later arrived then.
    pub fn arrived(&self) -> Option<Instant> {
        match self {
            Stream::Plain(t) => t.arrived,
            Stream::Tls(s) => s.get_ref().0.arrived,
        }
    }
}

/// A TCP connection whose reads carry the kernel's receive time stamp.
pub struct Tcp {
    io: TcpStream,
    /// The kernel agreed to stamp what arrives.
    stamped: bool,
    /// When the bytes of the last read arrived, if the kernel said.
    arrived: Option<Instant>,
}

impl Tcp {
    fn new(io: TcpStream) -> Tcp {
        let stamped = rx_stamp::enable(&io);
        Tcp {
            io,
            stamped,
            arrived: None,
        }
    }

    /// Writes what the socket takes now without waiting (`WouldBlock` when it takes nothing).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_write(buf)
    }
}

impl AsyncRead for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let arrived = std::task::ready!(rx_stamp::poll_read(&mut me.io, me.stamped, cx, buf))?;
        me.arrived = arrived;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The TLS side of an `https://` endpoint.
#[derive(Clone)]
pub struct Tls {
    connector: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
}

impl Tls {
    /// A TLS client for `host`, trusting the bundled Mozilla roots and the certificates in the PEM file
    /// named by `SSL_CERT_FILE`, if set.
    pub fn new(host: &str) -> Result<Tls, SetupError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = std::env::var_os("SSL_CERT_FILE") {
            let cert_file = |e: &dyn std::fmt::Display| SetupError::CertFile {
                path: path.to_string_lossy().into_owned(),
                reason: e.to_string(),
            };
            let certs = CertificateDer::pem_file_iter(&path).map_err(|e| cert_file(&e))?;
            for cert in certs {
                let cert = cert.map_err(|e| cert_file(&e))?;
                roots.add(cert).map_err(|e| cert_file(&e))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| SetupError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let server_name =
            ServerName::try_from(host.to_string()).map_err(|e| SetupError::ServerName {
                host: host.to_string(),
                reason: e.to_string(),
            })?;
        Ok(Tls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
        })
    }
}

/// Why a connection could not be made.
#[derive(Debug)]
pub enum ConnectError {
    /// The TCP connect or TLS handshake failed.
    Io(io::Error),
    /// `--connect-timeout` passed.
    Timeout(Duration),
}

/// Connects to `host:port` (and runs the TLS handshake when `tls` is given) within `timeout`; through
/// `proxy` when given: to the proxy, with a `CONNECT` tunnel to `host:port` before the TLS handshake.
/// Returns the stream and when it got past each step (resolution, TCP + tunnel, TLS).
pub async fn connect(
    host: &str,
    port: u16,
    tls: Option<&Tls>,
    timeout: Option<Duration>,
    proxy: Option<&Proxy>,
) -> Result<(Stream, ConnMarks), ConnectError> {
    let attempt = async {
        let (to_host, to_port) = match proxy {
            Some(p) => (p.host.as_str(), p.port),
            None => (host, port),
        };
        let addrs = tokio::net::lookup_host((to_host, to_port)).await?;
        let resolved = Instant::now();
        let tcp = connect_first(addrs).await?;
        tcp.set_nodelay(true)?;
        let mut tcp = Tcp::new(tcp);
        match tls {
            None => {
                let connected = Instant::now();
                Ok((Stream::Plain(tcp), marks(resolved, connected, None)))
            }
            Some(tls) => {
                if let Some(p) = proxy {
                    tunnel(&mut tcp, host, port, p).await?;
                }
                let connected = Instant::now();
                let s = tls.connector.connect(tls.server_name.clone(), tcp).await?;
                let done = Instant::now();
                Ok((
                    Stream::Tls(Box::new(s)),
                    marks(resolved, connected, Some(done)),
                ))
            }
        }
    };
    match timeout {
        None => attempt.await.map_err(ConnectError::Io),
        Some(t) => match tokio::time::timeout(t, attempt).await {
            Ok(r) => r.map_err(ConnectError::Io),
            Err(_) => Err(ConnectError::Timeout(t)),
        },
    }
}

fn marks(resolved: Instant, connected: Instant, tls_done: Option<Instant>) -> ConnMarks {
    ConnMarks {
        resolved,
        connected,
        tls_done,
    }
}

/// Connects to the resolved addresses in order (as `TcpStream::connect` does): the first that accepts, or
/// the last error.
async fn connect_first(addrs: impl Iterator<Item = SocketAddr>) -> io::Result<TcpStream> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any address",
        )
    }))
}
