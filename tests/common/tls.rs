//! A TLS terminator for the tests: accepts TLS on 127.0.0.1 with a fixture certificate and forwards the
//! plain bytes to a backend (the simulator), on a tokio runtime of its own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A file of `tests/fixtures/tls/<dir>` (`""` for the folder itself).
pub fn tls_fixture(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(dir)
        .join(name)
}

/// Starts a terminator serving `certs_dir`'s `server.pem` / `server.key` and forwarding to `backend`;
/// returns its address and the runtime (dropping it stops the terminator).
pub fn tls_terminator(
    certs_dir: &Path,
    backend: SocketAddr,
) -> (SocketAddr, tokio::runtime::Runtime) {
    let (addr, rt, _) = counting_tls_terminator(certs_dir, backend);
    (addr, rt)
}

/// [`tls_terminator`], also counting the TLS handshakes it completed.
pub fn counting_tls_terminator(
    certs_dir: &Path,
    backend: SocketAddr,
) -> (SocketAddr, tokio::runtime::Runtime, Arc<AtomicUsize>) {
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counter = handshakes.clone();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(certs_dir.join("server.pem"))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
    let key = PrivateKeyDer::from_pem_file(certs_dir.join("server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let Ok(mut up) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    (addr, rt, handshakes)
}
