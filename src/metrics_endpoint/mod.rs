//! `--metrics-listen`: llmperf's own Prometheus endpoint. One OS thread with its own single-threaded
//! runtime serves `GET /metrics` (hyper, HTTP/1.1) with the text [`exposition`] of the live board,
//! rendered per scrape; it never runs on the request runtime and never waits for the aggregator (it
//! reads what the aggregator last published). The socket is bound before anything is written, so a
//! taken port is a usage error; the endpoint stops when dropped.

pub mod exposition;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::oneshot;

use crate::live::Board;

/// The running endpoint.
pub struct MetricsEndpoint {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Binds `addr` (now) and serves `board` from a thread of its own.
    pub fn start(addr: SocketAddr, board: Arc<Board>) -> std::io::Result<MetricsEndpoint> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("llmperf-metrics".into())
            .spawn(move || runtime.block_on(serve(listener, board, stop_rx)))?;
        Ok(MetricsEndpoint {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when 0 was given).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    board: Arc<Board>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("--metrics-listen: cannot serve: {e}");
            return;
        }
    };
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::debug!("--metrics-listen: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let board = board.clone();
        connections.spawn(async move {
            let service = service_fn(move |req| respond(board.clone(), req));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
}

async fn respond(
    board: Arc<Board>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => (
            StatusCode::OK,
            exposition::CONTENT_TYPE,
            exposition::render(&board),
        ),
        (&Method::GET | &Method::HEAD, "/") => (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "llmperf: metrics at /metrics\n".to_string(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: llmperf serves GET /metrics\n".to_string(),
        ),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_exposition_and_frees_its_port_when_dropped() {
        let board = Arc::new(Board::new("demo".into(), None, Some(1), "m".into()));
        let ep = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap(), board).unwrap();
        let addr = ep.addr();
        let reply = get(addr, "/metrics");
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.contains("text/plain; version=0.0.4"), "{reply}");
        assert!(reply.contains("llmperf_sweep_points_planned{run=\"demo\",shard=\"\"} 1"));
        assert!(get(addr, "/other").starts_with("HTTP/1.1 404"));
        let taken = MetricsEndpoint::start(
            addr,
            Arc::new(Board::new("x".into(), None, None, "m".into())),
        );
        assert!(taken.is_err(), "the port is in use");
        drop(ep);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "no longer listening"
        );
    }
}
