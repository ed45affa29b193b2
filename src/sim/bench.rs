//! Ad-hoc measurements of the simulator, ignored by default; run in release:
//! `cargo test --release --lib sim::bench -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

fn chat_request(max_tokens: u32) -> String {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "one two three"}],
        "max_tokens": max_tokens, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}})
    .to_string();
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `request` on `tcp` and reads the chunked response to its end.
async fn round_trip(tcp: &mut TcpStream, request: &str, buf: &mut [u8]) {
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut len = 0;
    while !buf[..len].ends_with(b"0\r\n\r\n") {
        let n = tcp.read(&mut buf[len..]).await.unwrap();
        assert!(n > 0);
        len += n;
    }
}

/// Requests per second over 64 keep-alive connections, zero delays, 16-token streams with usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn throughput() {
    let cfg = SimConfig {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        threads: 2,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).unwrap();
    let request = chat_request(16);
    let deadline = Instant::now() + Duration::from_secs(3);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (addr, request) = (sim.addr(), request.clone());
        tasks.push(tokio::spawn(async move {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let (mut buf, mut done) = (vec![0u8; 16384], 0u64);
            while Instant::now() < deadline {
                round_trip(&mut tcp, &request, &mut buf).await;
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{total} requests in {secs:.2} s: {:.0} req/s",
        total as f64 / secs
    );
    assert_eq!(sim.truth().len() as u64, total);
}

/// How late the simulator's real sends are against its nominal timeline (ttft 50 ms, itl 10 ms, 20 tokens),
/// with 100 concurrent streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timeline_lateness() {
    let sim = SimServer::start(SimConfig::default()).unwrap();
    let request = chat_request(20);
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (addr, request) = (sim.addr(), request.clone());
        tasks.push(tokio::spawn(async move {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let mut buf = vec![0u8; 65536];
            for _ in 0..5 {
                round_trip(&mut tcp, &request, &mut buf).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut first: Vec<f64> = Vec::new();
    let mut last: Vec<f64> = Vec::new();
    for t in sim.truth() {
        first.push((t.first_token_s.unwrap() - t.received_s - 0.050) * 1e3);
        last.push((t.last_token_s.unwrap() - t.received_s - 0.050 - 0.190) * 1e3);
    }
    for (name, v) in [("first token", &mut first), ("last token", &mut last)] {
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        println!(
            "{name} late by ms: min {:.3} p50 {:.3} p99 {:.3} max {:.3}",
            q(0.0),
            q(0.5),
            q(0.99),
            q(1.0)
        );
        assert!(q(0.0) >= 0.0);
    }
}
