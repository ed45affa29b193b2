//! A small HTTP/1.1 stub server on 127.0.0.1 for replies the simulator does not send: every request is
//! answered by a closure from its path and body (a status, a `Content-Type` and a body, sent with
//! `Content-Length` on a kept-alive connection), and kept for the test to read. It stops when dropped.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One reply: HTTP status, `Content-Type`, body.
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// `200` with a JSON body.
    pub fn json(body: &str) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: body.as_bytes().to_vec(),
        }
    }

    /// `200` with an SSE body made of these `data:` payloads (each followed by a blank line).
    pub fn sse(events: &[&str]) -> Reply {
        Reply::sse_raw(
            &events
                .iter()
                .map(|e| format!("data: {e}\n\n"))
                .collect::<String>(),
        )
    }

    /// `200` with this exact `text/event-stream` body.
    pub fn sse_raw(body: &str) -> Reply {
        Reply {
            status: 200,
            content_type: "text/event-stream",
            body: body.as_bytes().to_vec(),
        }
    }
}

type Handler = dyn Fn(&str, &str) -> Reply + Send + Sync;

/// The stub server; stops accepting when dropped.
pub struct StubServer {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<(String, String)>>>,
}

impl StubServer {
    /// Starts a server that answers each request with `handler(path, body)`.
    pub fn start(handler: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) -> StubServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (stopping, kept) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (handler, kept, stopping) =
                            (handler.clone(), kept.clone(), stopping.clone());
                        std::thread::spawn(move || serve(conn, &*handler, &kept, &stopping));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        StubServer {
            port,
            stop,
            requests,
        }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request received so far: `(path, body)`, in arrival order.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers the requests of one connection until the client closes it or the server stops.
fn serve(
    mut conn: TcpStream,
    handler: &Handler,
    kept: &Mutex<Vec<(String, String)>>,
    stop: &AtomicBool,
) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf: Vec<u8> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let Some((path, body, used)) = parse_request(&buf) else {
            let mut chunk = [0u8; 8192];
            match conn.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
            continue;
        };
        buf.drain(..used);
        kept.lock().unwrap().push((path.clone(), body.clone()));
        let reply = handler(&path, &body);
        let head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
            reply.status,
            reply.content_type,
            reply.body.len()
        );
        if conn.write_all(head.as_bytes()).is_err() || conn.write_all(&reply.body).is_err() {
            return;
        }
    }
}

/// A whole request at the start of `buf`: its path, its body and the bytes it took.
fn parse_request(buf: &[u8]) -> Option<(String, String, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    if buf.len() < end + 4 + len {
        return None;
    }
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
    Some((path, body, end + 4 + len))
}
