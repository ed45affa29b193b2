//! A server that says `Keep-Alive` but drops the connection when the next request arrives on it, as
//! llama.cpp's server does after every streamed response: no request may fail because of it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;

/// Reads one HTTP request (head + Content-Length body); `None` at EOF.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut len = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if first && line.trim().is_empty() {
            continue;
        }
        first = false;
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn serve_one_then_drop(stream: TcpStream, served: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut w = stream;
    if read_request(&mut reader).is_none() {
        return;
    }
    let events = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":" there"}}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
        "[DONE]",
    ];
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n";
    let mut out = head.as_bytes().to_vec();
    for e in events {
        let frame = format!("data: {e}\n\n");
        out.extend_from_slice(format!("{:x}\r\n{frame}\r\n", frame.len()).as_bytes());
    }
    out.extend_from_slice(b"0\r\n\r\n");
    if w.write_all(&out).is_ok() {
        served.fetch_add(1, Ordering::SeqCst);
    }
    // Wait for the next request on this connection, then close without answering.
    let _ = read_request(&mut reader);
}

#[test]
fn a_server_closing_after_each_stream_loses_no_request() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counter = counter.clone();
            std::thread::spawn(move || serve_one_then_drop(stream, &counter));
        }
    });
    let run = Run::with_url(&format!("http://127.0.0.1:{port}/v1"))
        .flags("--prompt x --number 8")
        .ok_dir("parallel_1_number_8");
    let rows = run.rows();
    assert_eq!(rows.len(), 8);
    assert!(
        rows.iter().all(|r| r.success),
        "{:?}",
        rows.iter().map(|r| &r.error).collect::<Vec<_>>()
    );
    assert_eq!(
        served.load(Ordering::SeqCst),
        9,
        "connection test + 8 requests, each served once"
    );
    // Each request found its pooled connection closed and was resent on a new one: its phases are the
    // new connection's (timed from the resend), never the stale attempt's.
    let phases = crate::phases::phase_rows(&run.db());
    assert!(
        phases.iter().all(|r| r.phases[1].is_some()),
        "every resend opened a connection"
    );
    crate::phases::assert_in_order_before_ttft(&phases);
}
