//! The simulator's request log (`--mock-request-log`): one JSON line per generation or embedding request
//! received, `{"port":P,"path":"/v1/chat/completions","model":"m","request_id":"…"}` (`model` and
//! `request_id` null when absent), appended with one write each so lines from several simulators (ports)
//! sharing a file never interleave. `request_id` is the value of the request id header
//! ([`SimConfig::request_id_header`](super::SimConfig)); no other header is logged (they may hold secrets).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Mutex;

use hyper::header::HeaderMap;

/// An open request log.
#[derive(Debug)]
pub(crate) struct RequestLog {
    file: Mutex<File>,
    /// The id header's name, lowercase.
    id_header: String,
    /// The port the simulator listens on (set once it listens).
    port: AtomicU16,
}

impl RequestLog {
    /// Opens `path` for appending (created if missing).
    pub(crate) fn open(path: &Path, id_header: &str) -> std::io::Result<RequestLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(RequestLog {
            file: Mutex::new(file),
            id_header: id_header.to_ascii_lowercase(),
            port: AtomicU16::new(0),
        })
    }

    /// Records the port the simulator listens on.
    pub(crate) fn set_port(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }

    /// Appends the line of one request (a failed write is ignored: the log never fails a request).
    pub(crate) fn log(&self, path: &str, model: Option<&str>, headers: &HeaderMap) {
        let id = headers
            .get(self.id_header.as_str())
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let mut line = serde_json::json!({
            "port": self.port.load(Ordering::Relaxed),
            "path": path,
            "model": model,
            "request_id": id,
        })
        .to_string();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = file.write_all(line.as_bytes());
    }
}
