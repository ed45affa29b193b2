//! Fake model hubs on 127.0.0.1 for the download tests: ModelScope (answering as modelscope.cn's `/api/v1`
//! does for the `modelscope` 1.40 client) and the Hugging Face hub (`resolve` and the revision API). A test
//! adds files to repositories, points llmperf at [`FakeHub::endpoint`] (`MODELSCOPE_ENDPOINT` /
//! `HF_ENDPOINT`, see [`FakeHub::env`]) and reads back every request the hub saw. The server stops when
//! the hub is dropped.
//!
//! ModelScope routes:
//! * `GET /api/v1/{models|datasets}/{owner}/{name}/repo?Revision=R&FilePath=P`: the file's bytes, else 404
//!   with the JSON error body the real hub sends;
//! * `GET /api/v1/models/{owner}/{name}/repo/files?Revision=R&Recursive=True` and
//!   `GET /api/v1/datasets/{owner}/{name}/repo/tree?Revision=R&Recursive=True&PageNumber=N&PageSize=S`:
//!   `{"Code": 200, "Data": {"Files": [{"Name", "Path", "Type": "blob", "Size", …}]}, "Success": true}`;
//! * `GET /api/v1/{models|datasets}/{owner}/{name}` (the client's repository probe),
//!   `GET /api/v1/models/{owner}/{name}/revisions` and `GET /api/v1/repos/internalAccelerationInfo`.
//!
//! Checked by hand against the real `modelscope` 1.40.2 client (`dataset_file_download`, its
//! `local_files_only` cache probe, `snapshot_download` of a model with file patterns,
//! `dataset_snapshot_download`, a missing file → its `HTTPError [404] … code=10010205001`): the requests it
//! sends are the ones llmperf sends, and the cache it writes is the layout llmperf reads and writes.
//!
//! Hugging Face routes: `GET|HEAD /{repo}/resolve/{rev}/{file}`, `/datasets/{repo}/resolve/{rev}/{file}`
//! (with `X-Repo-Commit`, `ETag`), `GET /api/{models|datasets}/{repo}/revision/{rev}`.
//!
//! With [`FakeHub::require_token`] every request without that bearer token gets 401.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

/// Which hub the fake answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// ModelScope's `/api/v1`.
    ModelScope,
    /// The Hugging Face hub.
    HuggingFace,
}

/// One request the hub saw.
#[derive(Debug, Clone)]
pub struct HubRequest {
    /// `GET`, `HEAD`.
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// The request head as sent (lines joined with `\r\n`).
    pub head: String,
}

impl HubRequest {
    /// A header's value (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

#[derive(Default)]
struct State {
    /// `(kind segment, repo id)` → path → bytes.
    repos: BTreeMap<(String, String), BTreeMap<String, Vec<u8>>>,
    requests: Vec<HubRequest>,
    token: Option<String>,
}

/// A fake hub serving on 127.0.0.1 until dropped.
pub struct FakeHub {
    flavour: Flavour,
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The commit id the fake Hugging Face hub reports.
pub const HF_COMMIT: &str = "c0mm1t0000000000000000000000000000000001";

impl FakeHub {
    /// A fake ModelScope hub with no repositories.
    pub fn modelscope() -> FakeHub {
        FakeHub::start(Flavour::ModelScope)
    }

    /// A fake Hugging Face hub with no repositories.
    pub fn huggingface() -> FakeHub {
        FakeHub::start(Flavour::HuggingFace)
    }

    fn start(flavour: Flavour) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, halt) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let st = st.clone();
                        std::thread::spawn(move || serve(conn, flavour, &st));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeHub {
            flavour,
            port,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// Adds `path` with `bytes` to dataset `repo` (`owner/name`).
    pub fn dataset_file(&self, repo: &str, path: &str, bytes: &[u8]) -> &FakeHub {
        self.add("datasets", repo, path, bytes)
    }

    /// Adds `path` with `bytes` to model `repo` (`owner/name`).
    pub fn model_file(&self, repo: &str, path: &str, bytes: &[u8]) -> &FakeHub {
        self.add("models", repo, path, bytes)
    }

    fn add(&self, kind: &str, repo: &str, path: &str, bytes: &[u8]) -> &FakeHub {
        self.state
            .lock()
            .unwrap()
            .repos
            .entry((kind.to_string(), repo.to_string()))
            .or_default()
            .insert(path.to_string(), bytes.to_vec());
        self
    }

    /// Answers 401 to every request that does not carry `Authorization: Bearer <token>`.
    pub fn require_token(&self, token: &str) -> &FakeHub {
        self.state.lock().unwrap().token = Some(token.to_string());
        self
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment variable that points llmperf (and the hub's own client) here.
    pub fn env(&self) -> (&'static str, String) {
        match self.flavour {
            Flavour::ModelScope => ("MODELSCOPE_ENDPOINT", self.endpoint()),
            Flavour::HuggingFace => ("HF_ENDPOINT", self.endpoint()),
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<HubRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The requests so far whose target starts with `prefix`.
    pub fn requests_to(&self, prefix: &str) -> Vec<HubRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.target.starts_with(prefix))
            .collect()
    }
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One answer: status, extra headers, body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// Serves the requests of one connection (keep-alive, as both clients use it).
fn serve(mut conn: TcpStream, flavour: Flavour, state: &Mutex<State>) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let head = String::from_utf8_lossy(&head).trim_end().to_string();
        let mut first = head.split_whitespace();
        let method = first.next().unwrap_or("").to_string();
        let target = first.next().unwrap_or("").to_string();
        let request = HubRequest {
            method: method.clone(),
            target: target.clone(),
            head,
        };
        let (status, headers, body) = {
            let mut st = state.lock().unwrap();
            st.requests.push(request.clone());
            let authorised = match &st.token {
                None => true,
                Some(t) => {
                    request.header("authorization").as_deref() == Some(&format!("Bearer {t}"))
                }
            };
            if !authorised {
                unauthorised(flavour)
            } else {
                match flavour {
                    Flavour::ModelScope => modelscope(&st, &target),
                    Flavour::HuggingFace => huggingface(&st, &target),
                }
            }
        };
        let reason = match status {
            200 => "OK",
            401 => "Unauthorized",
            404 => "Not Found",
            _ => "Error",
        };
        let mut reply = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in &headers {
            reply.push_str(&format!("{k}: {v}\r\n"));
        }
        reply.push_str("\r\n");
        if conn.write_all(reply.as_bytes()).is_err() {
            return;
        }
        if method != "HEAD" && conn.write_all(&body).is_err() {
            return;
        }
    }
}

fn json_answer(status: u16, body: Value) -> Answer {
    (
        status,
        vec![("Content-Type".into(), "application/json".into())],
        body.to_string().into_bytes(),
    )
}

fn unauthorised(flavour: Flavour) -> Answer {
    match flavour {
        Flavour::ModelScope => json_answer(
            401,
            json!({"Code": 10010205002_i64, "Message": "Unauthorized: please login first", "RequestId": "fake", "Success": false}),
        ),
        Flavour::HuggingFace => (
            401,
            vec![("X-Error-Code".into(), "GatedRepo".into())],
            b"Access to this repository is restricted".to_vec(),
        ),
    }
}

fn ms_not_found(what: &str) -> Answer {
    json_answer(
        404,
        json!({"Code": 10010205001_i64, "Message": format!("{what} not exist"), "RequestId": "fake", "Success": false}),
    )
}

/// The query parameters of `target`, decoded.
fn query(target: &str) -> BTreeMap<String, String> {
    let Some((_, q)) = target.split_once('?') else {
        return BTreeMap::new();
    };
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn listing(files: &BTreeMap<String, Vec<u8>>) -> Vec<Value> {
    files
        .iter()
        .map(|(path, bytes)| {
            json!({
                "Name": path.rsplit('/').next().unwrap_or(path),
                "Path": path,
                "Type": "blob",
                "Size": bytes.len(),
                "Revision": "master",
                "IsLFS": false,
            })
        })
        .collect()
}

fn modelscope(st: &State, target: &str) -> Answer {
    let path = target.split('?').next().unwrap_or("");
    let q = query(target);
    if path == "/api/v1/repos/internalAccelerationInfo" {
        // The client's region probe: no intra-cloud acceleration here.
        return json_answer(
            200,
            json!({"Code": 200, "Data": {"InternalRegionQueryAddress": ""}, "Success": true}),
        );
    }
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        return ms_not_found("path");
    };
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() < 3 {
        return ms_not_found("path");
    }
    let key = (parts[0].to_string(), format!("{}/{}", parts[1], parts[2]));
    let Some(files) = st.repos.get(&key) else {
        return ms_not_found("repo");
    };
    match &parts[3..] {
        [] => json_answer(
            200,
            json!({"Code": 200, "Data": {"Path": parts[1], "Name": parts[2], "Visibility": 5}, "Success": true}),
        ),
        ["revisions"] => json_answer(
            200,
            json!({"Code": 200, "Data": {"RevisionMap": {"Branches": [{"Revision": "master"}], "Tags": []}}, "Success": true}),
        ),
        ["repo"] => {
            let file = q.get("FilePath").cloned().unwrap_or_default();
            match files.get(&file) {
                Some(bytes) => (
                    200,
                    vec![("Content-Type".into(), "application/octet-stream".into())],
                    bytes.clone(),
                ),
                None => ms_not_found(&format!("file {file}")),
            }
        }
        ["repo", "files"] => json_answer(
            200,
            json!({"Code": 200, "Data": {"Files": listing(files)}, "Message": "success", "Success": true}),
        ),
        ["repo", "tree"] => {
            let page: usize = q
                .get("PageNumber")
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            let size: usize = q
                .get("PageSize")
                .and_then(|p| p.parse().ok())
                .unwrap_or(100);
            let all = listing(files);
            let page_files: Vec<Value> = all
                .into_iter()
                .skip((page.max(1) - 1) * size)
                .take(size)
                .collect();
            json_answer(
                200,
                json!({"Code": 200, "Data": {"Files": page_files}, "Message": "success", "Success": true}),
            )
        }
        _ => ms_not_found("path"),
    }
}

fn huggingface(st: &State, target: &str) -> Answer {
    let path = target.split('?').next().unwrap_or("");
    let not_found = || {
        (
            404,
            vec![("X-Error-Code".into(), "EntryNotFound".into())],
            b"Entry not found".to_vec(),
        )
    };
    if let Some(rest) = path.strip_prefix("/api/") {
        let parts: Vec<&str> = rest.splitn(5, '/').collect();
        if let [kind, owner, name, "revision", _rev] = parts.as_slice() {
            let Some(files) = st.repos.get(&(kind.to_string(), format!("{owner}/{name}"))) else {
                return not_found();
            };
            let siblings: Vec<Value> = files.keys().map(|f| json!({"rfilename": f})).collect();
            return json_answer(
                200,
                json!({"id": format!("{owner}/{name}"), "sha": HF_COMMIT, "siblings": siblings}),
            );
        }
        return not_found();
    }
    let (kind, rest) = match path.strip_prefix("/datasets/") {
        Some(r) => ("datasets", r),
        None => ("models", path.trim_start_matches('/')),
    };
    let parts: Vec<&str> = rest.splitn(5, '/').collect();
    let [owner, name, "resolve", _rev, file] = parts.as_slice() else {
        return not_found();
    };
    match st
        .repos
        .get(&(kind.to_string(), format!("{owner}/{name}")))
        .and_then(|f| f.get(*file))
    {
        Some(bytes) => (
            200,
            vec![
                ("X-Repo-Commit".into(), HF_COMMIT.into()),
                ("ETag".into(), format!("\"{}\"", bytes.len())),
            ],
            bytes.clone(),
        ),
        None => not_found(),
    }
}
