//! A tokenizer (`--tokenizer-path org/name`) or a hub dataset (`--dataset kontext_bench`) that is in no
//! local cache: downloaded from the hub named by `HF_ENDPOINT` (here a small fake hub on 127.0.0.1) into the
//! Hugging Face cache layout, then found there offline; a hub that refuses gives a clear error before any
//! request. `HF_TOKEN` is sent to the hub and written nowhere.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::common::*;
use crate::tokens::shared_dir;

const REPO: &str = "HuggingFaceTB/SmolLM2-135M-Instruct";
const COMMIT: &str = "0123abcdef";

/// A fake Hugging Face hub: serves the bytes of each known path (404 for others), or answers every request
/// with `status`; records each request's head. Stops when dropped.
struct FakeHub {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeHub {
    fn start(routes: HashMap<String, Vec<u8>>, status: u16) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, halt) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => serve(conn, &routes, status, &log),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeHub {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
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

/// Answers one request (one per connection).
fn serve(
    mut conn: TcpStream,
    routes: &HashMap<String, Vec<u8>>,
    status: u16,
    log: &Mutex<Vec<String>>,
) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    log.lock().unwrap().push(head.clone());
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let body = routes.get(&path).cloned();
    let (code, body) = match (status, body) {
        (200, Some(b)) => (200, b),
        (200, None) => (404, b"Entry not found".to_vec()),
        (s, _) => (s, b"Access to this model is restricted".to_vec()),
    };
    let reply = format!(
        "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nX-Repo-Commit: {COMMIT}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes());
    let _ = conn.write_all(&body);
}

/// `llmperf` with `args`, downloads allowed from `hub` (HF_ENDPOINT), caching into `cache`.
fn online(
    out: &Path,
    cache: &Path,
    hub: &str,
    extra_env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    llmperf_command(out, args)
        .env_remove("HF_HUB_OFFLINE")
        .env("HF_ENDPOINT", hub)
        .env("HF_HUB_CACHE", cache)
        .env("MODELSCOPE_CACHE", cache.join("modelscope"))
        .envs(extra_env.iter().copied())
        .output()
        .expect("llmperf runs")
}

/// A `--dataset random` run whose tokenizer is the hub id [`REPO`].
fn run(
    out: &Path,
    cache: &Path,
    hub: &str,
    extra_env: &[(&str, &str)],
    url: &str,
) -> std::process::Output {
    let args = [
        "--url",
        url,
        "--model",
        "m",
        "--dataset",
        "random",
        "--tokenizer-path",
        REPO,
        "--min-prompt-length",
        "64",
        "--max-prompt-length",
        "64",
        "--number",
        "2",
    ];
    online(out, cache, hub, extra_env, &args)
}

/// Every file under `dir`, read as text where it is text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in walk(dir) {
        if let Ok(bytes) = std::fs::read(&entry) {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    text
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_hub_tokenizer_is_downloaded_into_the_cache_then_used_offline() {
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let source = shared_dir().join("tokenizers/smollm2-135m-instruct");
    let routes = ["tokenizer.json", "tokenizer_config.json"]
        .map(|f| {
            (
                format!("/{REPO}/resolve/main/{f}"),
                std::fs::read(source.join(f)).unwrap(),
            )
        })
        .into_iter()
        .collect();
    let hub = FakeHub::start(routes, 200);
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let secret = "hf_secret_token_4711";
    ok(&run(
        out.path(),
        cache.path(),
        &hub.endpoint(),
        &[("HF_TOKEN", secret)],
        &url,
    ));
    let repo = cache
        .path()
        .join("models--HuggingFaceTB--SmolLM2-135M-Instruct");
    let snapshot = repo.join("snapshots").join(COMMIT);
    assert_eq!(
        std::fs::read(snapshot.join("tokenizer.json")).unwrap(),
        std::fs::read(source.join("tokenizer.json")).unwrap(),
        "tokenizer.json cached byte for byte"
    );
    assert_eq!(
        std::fs::read(snapshot.join("tokenizer_config.json")).unwrap(),
        std::fs::read(source.join("tokenizer_config.json")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    let seen = hub.requests();
    assert!(
        seen.iter()
            .any(|h| h.starts_with(&format!("GET /{REPO}/resolve/main/tokenizer.json "))),
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|h| h
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {secret}"))),
        "the token goes to the hub: {seen:?}"
    );
    assert!(
        !all_text(out.path()).contains(secret),
        "the token is written nowhere"
    );
    assert_eq!(sim.requests().len(), 2 + 1, "measured + connection test");

    // Offline, with the hub gone: found in the cache.
    drop(hub);
    let out2 = tempfile::tempdir().unwrap();
    ok(&run(
        out2.path(),
        cache.path(),
        "http://127.0.0.1:9",
        &[("HF_HUB_OFFLINE", "1")],
        &url,
    ));
}

#[test]
fn a_hub_that_refuses_is_a_clear_error_before_any_request() {
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let hub = FakeHub::start(HashMap::new(), 401);
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = run(out.path(), cache.path(), &hub.endpoint(), &[], &url);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("HF_TOKEN"), "{err}");
    assert!(err.contains("Looked in"), "{err}");
    assert!(sim.requests().is_empty());
    assert!(
        !cache
            .path()
            .join("models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots")
            .join(COMMIT)
            .join("tokenizer.json")
            .exists(),
        "nothing half-written"
    );
}

#[test]
fn a_hub_dataset_is_downloaded_into_the_cache_then_used_offline() {
    // The hub copy of kontext-bench: a test split to read, a train split and a README to leave alone.
    let fixture = tempfile::tempdir().unwrap();
    crate::parquet_sets::kontext_fixture(fixture.path());
    let test_split =
        std::fs::read(fixture.path().join("data/test-00000-of-00001.parquet")).unwrap();
    let repo = "black-forest-labs/kontext-bench";
    let sha = "feedbeef01";
    let listing = serde_json::json!({
        "sha": sha,
        "siblings": [
            {"rfilename": "README.md"},
            {"rfilename": "data/test-00000-of-00001.parquet"},
            {"rfilename": "data/train-00000-of-00001.parquet"},
        ],
    });
    let routes: HashMap<String, Vec<u8>> = [
        (
            format!("/api/datasets/{repo}/revision/main"),
            listing.to_string().into_bytes(),
        ),
        (
            format!("/datasets/{repo}/resolve/{sha}/data/test-00000-of-00001.parquet"),
            test_split.clone(),
        ),
    ]
    .into_iter()
    .collect();
    let hub = FakeHub::start(routes, 200);
    let cache = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let dataset_run = |env: &[(&str, &str)], hub_url: &str| {
        let out = tempfile::tempdir().unwrap();
        let args = ["--url", &url, "--model", "vl", "--dataset", "kontext_bench"];
        let args = [&args[..], &["--number", "2", "--no-test-connection"]].concat();
        online(out.path(), cache.path(), hub_url, env, &args)
    };
    ok(&dataset_run(&[], &hub.endpoint()));
    let snapshot = cache
        .path()
        .join("datasets--black-forest-labs--kontext-bench/snapshots")
        .join(sha);
    assert_eq!(
        std::fs::read(snapshot.join("data/test-00000-of-00001.parquet")).unwrap(),
        test_split
    );
    assert!(!snapshot.join("data/train-00000-of-00001.parquet").exists());
    assert!(!snapshot.join("README.md").exists());
    let seen = hub.requests();
    assert_eq!(seen.len(), 2, "the listing and the one test file: {seen:?}");
    let bodies = sim.requests();
    assert_eq!(bodies.len(), 2);
    let first: serde_json::Value = serde_json::from_str(&bodies[0].1).unwrap();
    assert_eq!(
        first["messages"][0]["content"][0]["text"],
        "Make the sky purple"
    );
    // Offline, with the hub gone: read from the cache.
    drop(hub);
    ok(&dataset_run(
        &[("HF_HUB_OFFLINE", "1")],
        "http://127.0.0.1:9",
    ));
    assert_eq!(sim.requests().len(), 4);
}

#[test]
fn flickr8k_shards_are_downloaded_from_the_hub() {
    let mut tar = Vec::new();
    crate::media::tar_entry(&mut tar, "s000.jpg", b"\xff\xd8\xff\xe0fakejpeg");
    crate::media::tar_entry(&mut tar, "s000.txt", b"A dog runs on the grass.");
    tar.extend(vec![0u8; 1024]);
    let repo = "clip-benchmark/wds_flickr8k";
    let sha = "c0ffee42";
    let listing = serde_json::json!({
        "sha": sha,
        "siblings": [
            {"rfilename": "README.md"},
            {"rfilename": "test/0.tar"},
            {"rfilename": "train/0.tar"},
        ],
    });
    let routes: HashMap<String, Vec<u8>> = [
        (
            format!("/api/datasets/{repo}/revision/main"),
            listing.to_string().into_bytes(),
        ),
        (
            format!("/datasets/{repo}/resolve/{sha}/test/0.tar"),
            tar.clone(),
        ),
    ]
    .into_iter()
    .collect();
    let hub = FakeHub::start(routes, 200);
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let o = online(
        out.path(),
        cache.path(),
        &hub.endpoint(),
        &[],
        &[
            "--url",
            &url,
            "--model",
            "vl",
            "--dataset",
            "flickr8k",
            "--number",
            "2",
            "--no-test-connection",
        ],
    );
    ok(&o);
    let snapshot = cache
        .path()
        .join("datasets--clip-benchmark--wds_flickr8k/snapshots")
        .join(sha);
    assert_eq!(std::fs::read(snapshot.join("test/0.tar")).unwrap(), tar);
    assert!(!snapshot.join("train/0.tar").exists());
    let first: serde_json::Value = serde_json::from_str(&sim.requests()[0].1).unwrap();
    assert_eq!(
        first["messages"][0]["content"][0]["text"],
        "A dog runs on the grass."
    );
}
