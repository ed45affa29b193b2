//! `https://` endpoints: llmperf's own HTTP/1.1 client over rustls, through a TLS-terminating proxy in front
//! of the simulator, trusting a test CA given by `SSL_CERT_FILE` (and refusing the server without it).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// Starts a TLS proxy on 127.0.0.1 forwarding to `backend`, on a runtime of its own; returns its port and
/// the runtime (dropping it stops the proxy).
fn tls_proxy(backend: SocketAddr) -> (u16, tokio::runtime::Runtime) {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(fixture("server.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(fixture("server.key")).unwrap();
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
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut up) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    (port, rt)
}

/// A run against the TLS proxy on `port`, trusting `ca` (`SSL_CERT_FILE`) or only the system roots.
fn run(port: u16, ca: Option<&Path>) -> Run {
    let run = Run::with_url(&format!("https://localhost:{port}/v1/chat/completions"))
        .flags("--prompt x --parallel 2 --number 6 --max-tokens 4 --total-timeout 3")
        .env_remove("SSL_CERT_FILE");
    match ca {
        Some(ca) => run.env("SSL_CERT_FILE", ca),
        None => run,
    }
}

#[test]
fn https_endpoints_work_and_untrusted_servers_are_refused() {
    let sim = fast_sim();
    let (port, _rt) = tls_proxy(sim.addr());
    let rows = run(port, Some(&fixture("ca.pem")))
        .ok_dir("parallel_2_number_6")
        .rows();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.success && r.completion_tokens == Some(4)));
    // Without the test CA, the certificate is not trusted: the connection test fails and says why.
    let o = run(port, None).output();
    assert!(!o.status.success());
    let stderr = stderr(&o).to_lowercase();
    assert!(stderr.contains("certificate"), "{stderr}");
}
