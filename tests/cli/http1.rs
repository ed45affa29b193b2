//! llmperf's HTTP/1.1 client against servers the simulator does not imitate: one that closes every
//! kept-alive connection after each response without saying so (the next request on it must be retried on
//! a fresh connection, not failed), and one whose bodies end when it closes the connection.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;

const BODY: &str = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;

/// Reads one request (head and `Content-Length` body); false at EOF.
fn read_request(conn: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                return true;
            }
        }
        match conn.read(&mut byte) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
    }
}

/// A server answering one request per connection, then closing it; `framed`: with `Content-Length` and
/// no `Connection: close` (it just hangs up after), else a close-delimited body. Counts connections.
fn one_shot_server(framed: bool) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            count.fetch_add(1, Ordering::Relaxed);
            if !read_request(&mut conn) {
                continue;
            }
            let head = if framed {
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    BODY.len()
                )
            } else {
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(BODY.as_bytes());
            // Dropping the stream closes the connection.
        }
    });
    (port, accepted)
}

fn run_against(port: u16) -> Vec<Row> {
    Run::with_url(&format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .flags("--prompt x --parallel 2 --number 8")
        .ok_dir("parallel_2_number_8")
        .rows()
}

#[test]
fn connections_closed_by_the_server_are_replaced_not_failed() {
    let (port, accepted) = one_shot_server(true);
    let rows = run_against(port);
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r.success), "{rows:?}");
    assert!(rows.iter().all(|r| r.completion_tokens == Some(1)));
    // One connection per request (and the connection test): none was reused after its close.
    assert!(accepted.load(Ordering::Relaxed) >= 9);
}

#[test]
fn close_delimited_bodies_are_read_to_the_end() {
    let (port, _) = one_shot_server(false);
    let rows = run_against(port);
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r.success && r.prompt_tokens == Some(3)));
}
