//! The simulator's faults over real loopback HTTP: what each one puts on the wire.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::sim::*;

fn sim(faults: Vec<FaultRule>) -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        faults,
        ..SimConfig::default()
    })
    .unwrap()
}

fn body(stream: bool, fault: Option<&str>) -> String {
    let mut b = json!({"model": "m", "messages": [{"role": "user", "content": "a b"}], "max_tokens": 3,
        "ignore_eos": true, "stream": stream, "stream_options": {"include_usage": true}});
    if let Some(f) = fault {
        b["llmperf_fault"] = json!(f);
    }
    b.to_string()
}

/// Sends one raw HTTP/1.1 request (connection: close) and returns everything read, or the read error.
async fn raw(
    sim: &SimServer,
    body: &str,
    header: Option<&str>,
) -> (Vec<u8>, Option<std::io::Error>) {
    let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
    let extra = header.map_or(String::new(), |f| format!("{FAULT_HEADER}: {f}\r\n"));
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn http_faults_answer_with_status_retry_after_and_json() {
    let s = sim(vec![]);
    for (name, status, retry) in [
        ("http-500", 500, false),
        ("http-503", 503, true),
        ("http-429", 429, true),
        ("http-400", 400, false),
    ] {
        let (out, err) = raw(&s, &body(true, Some(name)), None).await;
        assert!(err.is_none());
        let t = text(&out);
        assert!(t.starts_with(&format!("HTTP/1.1 {status} ")), "{t}");
        assert_eq!(
            t.to_lowercase().contains("retry-after: 1\r\n"),
            retry,
            "{t}"
        );
        let json_body: Value = serde_json::from_str(t.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(json_body["error"]["code"], status);
        assert!(json_body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(name));
    }
    let (out, _) = raw(&s, &body(true, None), Some("nonsense")).await;
    assert!(
        text(&out).starts_with("HTTP/1.1 400 "),
        "unknown fault names are a 400"
    );
}

#[tokio::test]
async fn content_faults_shape_the_stream() {
    let s = sim(vec![]);
    let (out, _) = raw(&s, &body(true, Some("no-done")), None).await;
    let t = text(&out);
    assert!(t.contains("\"usage\"") && !t.contains("[DONE]"), "{t}");
    let (out, _) = raw(&s, &body(true, Some("truncated")), None).await;
    let t = text(&out);
    assert!(
        t.contains("hello") && !t.contains("\"usage\"") && !t.contains("[DONE]"),
        "{t}"
    );
    let (out, _) = raw(&s, &body(true, Some("malformed")), None).await;
    let t = text(&out);
    assert!(
        t.contains("[{\"ind\n\n") && t.contains("\"usage\"") && t.contains("[DONE]"),
        "{t}"
    );
    let (out, _) = raw(&s, &body(true, Some("error-event")), None).await;
    let t = text(&out);
    assert!(
        t.contains("data: {\"error\":") && !t.contains("\"usage\""),
        "{t}"
    );
    let (out, _) = raw(&s, &body(true, None), Some("invalid-utf8")).await;
    assert!(out.windows(2).any(|w| w == [0xFF, 0xFE]));
    let (out, _) = raw(&s, &body(true, Some("wrong-content-type")), None).await;
    let t = text(&out).to_lowercase();
    assert!(
        t.contains("content-type: text/plain") && t.contains("[done]"),
        "{t}"
    );
    let (out, _) = raw(&s, &body(true, Some("big-line")), None).await;
    let longest = out.split(|b| *b == b'\n').map(<[u8]>::len).max().unwrap();
    assert!(longest > fault::BIG_LINE_BYTES, "{longest}");
}

#[tokio::test]
async fn non_stream_faults_cut_or_replace_the_body() {
    let s = sim(vec![]);
    let (out, _) = raw(&s, &body(false, Some("malformed")), None).await;
    let t = text(&out);
    let b = t.split("\r\n\r\n").nth(1).unwrap();
    assert!(serde_json::from_str::<Value>(b).is_err(), "{b}");
    let (out, _) = raw(&s, &body(false, Some("error-event")), None).await;
    let t = text(&out);
    assert!(
        t.starts_with("HTTP/1.1 200 ") && t.contains("{\"error\":"),
        "{t}"
    );
}

#[tokio::test]
async fn reset_aborts_the_connection_after_the_first_chunk() {
    let s = sim(vec![]);
    let (out, err) = raw(&s, &body(true, Some("reset")), None).await;
    assert!(text(&out).contains("hello"), "{}", text(&out));
    let err = err.expect("a reset is a read error, not an end of file");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
}

#[tokio::test]
async fn every_nth_rule_counts_generation_requests() {
    let s = sim(vec![FaultRule {
        fault: Fault::Http500,
        every: 3,
    }]);
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let (out, _) = raw(&s, &body(true, None), None).await;
        statuses.push(text(&out)[9..12].to_string());
    }
    assert_eq!(statuses, ["200", "200", "500", "200", "200", "500"]);
}

#[tokio::test]
async fn slow_drip_sends_one_byte_at_a_time() {
    let s = sim(vec![]);
    let mut tcp = TcpStream::connect(s.addr()).await.unwrap();
    let b = body(true, Some("slow-drip"));
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{b}",
        b.len()
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    // Skip the head, then each read of the body brings at most one chunk-framed byte.
    let mut total = 0;
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_millis(450) {
        let n = tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut buf))
            .await
            .map_or(0, |r| r.unwrap());
        total += n;
    }
    // Head (~150 bytes) plus about four 1-byte chunks ("1\r\nX\r\n"): far less than the ~1 KB response.
    assert!(total < 400, "{total} bytes in 450 ms");
}

#[test]
fn kill_refuses_connections_and_revive_listens_on_the_same_port() {
    let mut s = sim(vec![]);
    let addr = s.addr();
    assert!(std::net::TcpStream::connect(addr).is_ok());
    s.kill();
    let e = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    s.revive().unwrap();
    assert_eq!(s.addr(), addr);
    assert!(std::net::TcpStream::connect(addr).is_ok());
}
