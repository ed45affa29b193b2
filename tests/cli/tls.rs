//! `https://` endpoints: llmperf's own HTTP/1.1 client over rustls, through a TLS-terminating proxy in front
//! of the simulator, trusting a test CA given by `SSL_CERT_FILE` (and refusing the server without it).

use std::path::Path;

use crate::common::tls::{tls_fixture, tls_terminator};
use crate::common::*;

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
    let (addr, _rt) = tls_terminator(&tls_fixture("", ""), sim.addr());
    let rows = run(addr.port(), Some(&tls_fixture("", "ca.pem")))
        .ok_dir("parallel_2_number_6")
        .rows();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.success && r.completion_tokens == Some(4)));
    // Without the test CA, the certificate is not trusted: the connection test fails and says why.
    let o = run(addr.port(), None).output();
    assert!(!o.status.success());
    let stderr = stderr(&o).to_lowercase();
    assert!(stderr.contains("certificate"), "{stderr}");
}
