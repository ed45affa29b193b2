//! Proxies from the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`), as evalscope's aiohttp uses them:
//! a small proxy on 127.0.0.1 started by the test sees `http://` requests in absolute form and `https://`
//! ones as a `CONNECT` tunnel; loopback endpoints are never proxied.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use base64::Engine as _;

use crate::common::tls::{tls_fixture, tls_terminator};
use crate::common::*;

/// The name the tests give the server: not loopback, and only the proxy knows where it is.
const HOST: &str = "llm.proxied.test";

/// A forwarding proxy on 127.0.0.1: every connection's request head is recorded; a `CONNECT` is answered
/// with 200 and tunnelled to `tunnel_to`, anything else is forwarded as it is to `forward_to`. Threads end
/// with their connections; the listener thread ends with the test process.
struct TestProxy {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

fn read_head(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

impl TestProxy {
    fn start(forward_to: SocketAddr, tunnel_to: Option<SocketAddr>) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let Some(head) = read_head(&mut client) else {
                        return;
                    };
                    let text = String::from_utf8_lossy(&head).into_owned();
                    seen.lock().unwrap().push(text.clone());
                    let connect = text.starts_with("CONNECT ");
                    let target = if connect { tunnel_to } else { Some(forward_to) };
                    let Some(Ok(mut up)) = target.map(TcpStream::connect) else {
                        let _ = client
                            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
                        return;
                    };
                    if connect {
                        let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    } else {
                        let _ = up.write_all(&head);
                    }
                    pipe(client.try_clone().unwrap(), up.try_clone().unwrap());
                    pipe(up, client);
                });
            }
        });
        TestProxy { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// `llmperf` against `url` with only the proxy variables the test sets (the machine's own are removed).
fn run(url: &str) -> Run {
    let mut run = Run::with_url(url).flags("--prompt hello --max-tokens 4");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        run = run.env_remove(var);
    }
    run
}

fn sim_addr(sim: &llmperf::sim::SimServer) -> SocketAddr {
    sim.base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap()
}

#[test]
fn http_goes_through_the_proxy_in_absolute_form_with_basic_auth() {
    let sim = fast_sim();
    let proxy = TestProxy::start(sim_addr(&sim), None);
    let port = sim_addr(&sim).port();
    let url = format!("http://{HOST}:{port}/v1/chat/completions");
    let proxy_url = format!("http://us%40er:s3cr%3At@127.0.0.1:{}", proxy.port);
    let run = run(&url).env("http_proxy", &proxy_url).flags("--number 3");
    let o = run.output();
    ok(&o);
    let heads = proxy.heads();
    assert!(!heads.is_empty());
    let auth = base64::engine::general_purpose::STANDARD.encode("us@er:s3cr:t");
    for head in &heads {
        assert!(
            head.starts_with(&format!(
                "POST http://{HOST}:{port}/v1/chat/completions HTTP/1.1\r\n"
            )),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\nProxy-Authorization: Basic {auth}\r\n")),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\nHost: {HOST}:{port}\r\n")),
            "{head}"
        );
    }
    assert_eq!(
        sim.requests().len(),
        4,
        "connection test + 3 requests reached the server"
    );
    let stderr = stderr(&o);
    let warned = stderr.matches("latencies include the proxy").count();
    assert_eq!(warned, 1, "one warning line: {stderr}");
    assert!(
        stderr.contains(&format!("127.0.0.1:{} (from http_proxy)", proxy.port)),
        "{stderr}"
    );
    // The proxy password never reaches the console or a file.
    assert!(!stderr.contains("s3cr") && !String::from_utf8_lossy(&o.stdout).contains("s3cr"));
    for entry in files_under(&run.root()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cr"),
            "{}",
            entry.display()
        );
    }
}

#[test]
fn https_goes_through_a_connect_tunnel() {
    let sim = fast_sim();
    let (tls_addr, _rt) = tls_terminator(&tls_fixture("proxied", ""), sim_addr(&sim));
    let proxy = TestProxy::start(sim_addr(&sim), Some(tls_addr));
    let url = format!("https://{HOST}/v1/chat/completions");
    let proxy_url = format!("127.0.0.1:{}", proxy.port);
    let run = run(&url)
        .env("HTTPS_PROXY", &proxy_url)
        .env("SSL_CERT_FILE", tls_fixture("proxied", "ca.pem"))
        .flags("--parallel 2 --number 3");
    run.ok();
    let heads = proxy.heads();
    assert!(!heads.is_empty());
    for head in &heads {
        assert!(
            head.starts_with(&format!(
                "CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n"
            )),
            "{head}"
        );
    }
    assert_eq!(sim.requests().len(), 4);
    let rows = run.run_dir("parallel_2_number_3").rows();
    assert!(rows.iter().all(|r| r.success));
    // Connection phases through the tunnel: every tunnel but the connection test's (reused by a stored
    // request) is one stored request's phase_connect (to the proxy + CONNECT), followed by its TLS phase.
    let phases = crate::phases::phase_rows(&run.run_dir("parallel_2_number_3").db());
    let opened: Vec<_> = phases.iter().filter(|r| r.phases[1].is_some()).collect();
    assert_eq!(opened.len(), heads.len() - 1);
    assert!(opened
        .iter()
        .all(|r| r.phases[1] > Some(0.0) && r.phases[2] > Some(0.0)));
    crate::phases::assert_in_order_before_ttft(&phases);
}

#[test]
fn loopback_and_no_proxy_hosts_are_reached_directly() {
    let sim = fast_sim();
    let proxy = TestProxy::start(sim_addr(&sim), None);
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port);
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let o = run(&url)
        .env("HTTP_PROXY", &proxy_url)
        .flags("--number 3")
        .output();
    ok(&o);
    assert!(proxy.heads().is_empty(), "loopback is never proxied");
    assert!(!stderr(&o).contains("latencies include the proxy"));
    // NO_PROXY names the host: llmperf connects to it itself (the name does not resolve here, so the
    // request fails), and the proxy sees nothing.
    let url = format!(
        "http://{HOST}:{}/v1/chat/completions",
        sim_addr(&sim).port()
    );
    let run = run(&url)
        .env("HTTP_PROXY", &proxy_url)
        .env("NO_PROXY", ".proxied.test")
        .flags("--no-test-connection --number 1 --connect-timeout 5");
    let o = run.output();
    assert!(
        proxy.heads().is_empty(),
        "NO_PROXY host reached directly: {:?}",
        proxy.heads()
    );
    let rows = run.run_dir("parallel_1_number_1").rows();
    assert!(!rows[0].success);
    assert!(!stderr(&o).contains("latencies include the proxy"));
}
