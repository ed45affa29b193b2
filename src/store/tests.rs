//! Tests for the the run's database writer: schema, row values, never overwriting, commit cadence; and the
//! record builders and helpers that `compat_tests` shares.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use rusqlite::Connection;

use super::*;
use crate::record::FailureKind;

pub(super) const EVALSCOPE_SCHEMA: [(&str, &str); 14] = [
    ("request", "TEXT"),
    ("start_time", "REAL"),
    ("inter_token_latencies", "TEXT"),
    ("success", "INTEGER"),
    ("response_messages", "TEXT"),
    ("completed_time", "REAL"),
    ("latency", "REAL"),
    ("first_chunk_latency", "REAL"),
    ("prompt_tokens", "INTEGER"),
    ("completion_tokens", "INTEGER"),
    ("max_gpu_memory_cost", "REAL"),
    ("time_per_output_token", "REAL"),
    ("request_id", "TEXT"),
    ("is_stream", "INTEGER"),
];

pub(super) const CHUNK_1: &str = r#"{"id":"c1","object":"chat.completion.chunk","created":1795972153,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
pub(super) const CHUNK_2: &str = r#"{"id":"c1","choices":[{"index":0,"delta":{"content":" héllo"},"logprobs":null,"finish_reason":"length","score":1.0,"ok":true}]}"#;
pub(super) const BODY: &str = r#"{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}"#;

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(super) fn stream_ok(t0: Instant) -> RequestRecord {
    let mut r = RequestRecord::new(
        2,
        false,
        Arc::from(r#"{"messages": [], "stream": true}"#),
        t0,
    );
    r.sent_at = t0 + ms(1);
    r.is_stream = true;
    r.success = true;
    r.status_code = Some(200);
    r.chunk_times = vec![t0 + ms(51), t0 + ms(61), t0 + ms(76)];
    r.completed_at = t0 + ms(81);
    r.usage.prompt_tokens = Some(7);
    r.usage.completion_tokens = Some(3);
    r.usage.cached_tokens = Some(2);
    r.keep_response(CHUNK_1.as_bytes());
    r.keep_response(CHUNK_2.as_bytes());
    r
}

pub(super) fn non_stream_ok(t0: Instant) -> RequestRecord {
    let mut r = RequestRecord::new(3, false, Arc::from(r#"{"stream": false}"#), t0);
    r.sent_at = t0;
    r.success = true;
    r.status_code = Some(200);
    r.completed_at = t0 + ms(40);
    r.usage.prompt_tokens = Some(7);
    r.usage.completion_tokens = Some(5);
    r.keep_response(BODY.as_bytes());
    r
}

pub(super) fn failed(t0: Instant) -> RequestRecord {
    let mut r = RequestRecord::new(4, false, Arc::from(r#"{"max_tokens": 13}"#), t0);
    r.sent_at = t0;
    r.is_stream = true;
    r.status_code = Some(500);
    r.fail(FailureKind::HttpStatus, r#"{"error": "boom"}"#, t0 + ms(5));
    r
}

fn warmup(t0: Instant) -> RequestRecord {
    let mut r = stream_ok(t0);
    r.is_warmup = true;
    r
}

pub(super) fn count(path: &Path) -> i64 {
    let c = Connection::open(path).unwrap();
    c.query_row("SELECT COUNT(*) FROM result", [], |row| row.get(0))
        .unwrap()
}

/// Runs `python3 -c script` with `input` on stdin; `None` when python3 is not installed.
pub(super) fn python(script: &str, input: &str) -> Option<String> {
    let child = Command::new("python3")
        .args(["-c", script])
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(_) => {
            eprintln!("note: python3 not found; skipping the Python unpickling check");
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap().trim_end().to_owned())
}

pub(super) const PY_UNPICKLE: &str = "import pickle,base64,sys,json; \
    print(json.dumps(pickle.loads(base64.b64decode(sys.stdin.read())), ensure_ascii=False))";

pub(super) fn table_info(conn: &Connection) -> Vec<(String, String)> {
    let mut stmt = conn.prepare("PRAGMA table_info(result)").unwrap();
    let rows = stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(1)?, row.get::<_, String>(2)?))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// One column of every row, in insertion order.
fn col<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> Vec<T> {
    let mut stmt = conn
        .prepare(&format!("SELECT {name} FROM result ORDER BY rowid"))
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn writes_evalscope_rows_then_extras() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 1000).unwrap();
    let t0 = Instant::now();
    store.insert(warmup(t0));
    store.insert(stream_ok(t0));
    store.insert(non_stream_ok(t0));
    store.insert(failed(t0));
    assert_eq!(
        store.finish().unwrap(),
        3,
        "the warmup record is not stored"
    );
    assert_eq!(count(&path), 3);

    let c = Connection::open(&path).unwrap();
    let cols = table_info(&c);
    let want: Vec<(String, String)> = EVALSCOPE_SCHEMA
        .iter()
        .map(|&(n, t)| (n.to_owned(), t.to_owned()))
        .collect();
    assert_eq!(cols[..14], want[..]);
    let extras: Vec<&str> = cols[14..].iter().map(|(n, _)| n.as_str()).collect();
    let want_extras = ["status_code", "error", "scheduled_time", "send_time"];
    assert_eq!(extras[..4], want_extras);
    assert_eq!(
        extras[4..],
        [
            "chunk_times",
            "cached_tokens",
            "failure_kind",
            "intended_prompt_tokens",
            "reasoning_tokens",
            "answer_tokens",
            "first_reasoning_latency",
            "first_answer_latency",
            "conversation_id",
            "turn_index",
            "tool_call_count",
            "valid_tool_calls",
            "invalid_tool_calls",
            "first_tool_call_latency",
            "tool_call_tokens",
            "tool_calls",
            "schema_valid",
            "truncated",
            "validation_error",
            "endpoint",
            "phase_dns",
            "phase_connect",
            "phase_tls",
            "phase_write",
            "phase_headers",
            "phase_first_byte"
        ]
    );

    // Rows: stream success, non-stream success, HTTP 500.
    let s = stream_ok(t0);
    let request: Vec<String> = col(&c, "request");
    assert_eq!(request[0], r#"{"messages": [], "stream": true}"#);
    let itl: Vec<String> = col(&c, "inter_token_latencies");
    assert_eq!(itl, ["[0.01, 0.015]", "[]", "[]"], "as Python's json.dumps");
    assert_eq!(col::<i64>(&c, "success"), [1, 1, 0]);
    assert_eq!(col::<i64>(&c, "is_stream"), [1, 0, 1]);
    let latency: Vec<Option<f64>> = col(&c, "latency");
    let ttft: Vec<Option<f64>> = col(&c, "first_chunk_latency");
    let tpot: Vec<Option<f64>> = col(&c, "time_per_output_token");
    assert!((latency[0].unwrap() - 0.080).abs() < 1e-9);
    assert!((ttft[0].unwrap() - 0.050).abs() < 1e-9);
    assert!(
        (tpot[0].unwrap() - 0.015).abs() < 1e-9,
        "(0.080 - 0.050) / (3 - 1)"
    );
    assert_eq!((ttft[1], tpot[1]), (latency[1], Some(0.0)), "non-stream");
    assert_eq!((latency[2], ttft[2], tpot[2]), (None, None, None));
    let prompt: Vec<Option<i64>> = col(&c, "prompt_tokens");
    let completion: Vec<Option<i64>> = col(&c, "completion_tokens");
    let cached: Vec<Option<i64>> = col(&c, "cached_tokens");
    assert_eq!(prompt, [Some(7), Some(7), None]);
    assert_eq!(completion, [Some(3), Some(5), None]);
    assert_eq!(cached, [Some(2), None, None]);
    let gpu: Vec<Option<f64>> = col(&c, "max_gpu_memory_cost");
    assert_eq!(gpu, [Some(0.0), Some(0.0), None]);
    assert_eq!(col::<Option<String>>(&c, "request_id"), [None, None, None]);

    let start: Vec<f64> = col(&c, "start_time");
    assert_eq!(start[0], s.start_time());
    assert_eq!(col::<f64>(&c, "completed_time")[0], s.completed_time());
    assert_eq!(col::<f64>(&c, "send_time"), start);
    let scheduled: Vec<f64> = col(&c, "scheduled_time");
    assert_eq!(scheduled[0], s.scheduled_time());
    assert!(scheduled[0] < start[0], "sent 1 ms after its schedule slot");
    let chunk_times: Vec<String> = col(&c, "chunk_times");
    assert_eq!(chunk_times[0], pyjson::dumps(&s.chunk_times_s()));
    assert_eq!(chunk_times[2], "[]");

    let status: Vec<Option<i64>> = col(&c, "status_code");
    assert_eq!(status, [Some(200), Some(200), Some(500)]);
    let error: Vec<Option<String>> = col(&c, "error");
    assert_eq!(error, [None, None, Some(r#"{"error": "boom"}"#.to_owned())]);
    let kind: Vec<Option<String>> = col(&c, "failure_kind");
    assert_eq!(kind, [None, None, Some("http_status".to_owned())]);

    // A failure with no kept payloads stores the pickled empty list.
    let messages: Vec<String> = col(&c, "response_messages");
    let empty = base64::engine::general_purpose::STANDARD
        .decode(&messages[2])
        .unwrap();
    let v: serde_json::Value = serde_pickle::from_slice(&empty, Default::default()).unwrap();
    assert_eq!(v, serde_json::json!([]));
}

#[test]
fn never_overwrites_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    std::fs::write(&path, b"keep me").unwrap();
    let err = Store::create(&path, 10).err().expect("must refuse");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("already exists") && msg.contains("benchmark_data.db"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
}

/// Polls `count(path)` until `ok(count)` or a generous timeout.
fn wait_for(path: &Path, ok: impl Fn(i64) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = count(path);
        if ok(n) || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(ms(20));
    }
}

#[test]
fn commits_every_interval_and_on_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 2).unwrap();
    let t0 = Instant::now();
    for _ in 0..5 {
        store.insert(stream_ok(t0));
    }
    // Rows 1-4 are committed by the interval; the 5th by the one-second timer or the flush below.
    let seen = wait_for(&path, |n| n >= 4);
    assert!(seen >= 4, "saw {seen} rows");
    store.flush().unwrap();
    assert_eq!(count(&path), 5);
    store.insert(failed(t0));
    store.flush().unwrap();
    assert_eq!(count(&path), 6);
    assert_eq!(store.finish().unwrap(), 6);
}

#[test]
fn pending_rows_are_committed_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 1000).unwrap();
    let t0 = Instant::now();
    for _ in 0..3 {
        store.insert(non_stream_ok(t0));
    }
    assert_eq!(
        wait_for(&path, |n| n == 3),
        3,
        "the timer commits without flush or interval"
    );
    drop(store); // dropping still commits and stops the thread
    assert_eq!(count(&path), 3);
}

#[test]
fn a_locked_database_postpones_the_commit_without_losing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 1000).unwrap();
    let reader = Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT COUNT(*) FROM result", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
    let t0 = Instant::now();
    store.insert(stream_ok(t0));
    store.insert(failed(t0));
    // The reader's shared lock blocks every commit past the busy timeout: flush reports it.
    let err = store.flush().expect_err("locked");
    assert!(format!("{err:#}").contains("locked"), "{err:#}");
    reader.execute_batch("COMMIT").unwrap();
    store.flush().unwrap();
    assert_eq!(count(&path), 2);
    assert_eq!(store.finish().unwrap(), 2);
}

/// The child half of [`a_killed_process_leaves_the_committed_rows`]: writes, flushes, writes more, aborts.
#[test]
#[ignore]
fn crash_child() {
    let Some(path) = std::env::var_os("LLMPERF_STORE_CRASH_DB") else {
        return;
    };
    let store = Store::create(Path::new(&path), 1000).unwrap();
    let t0 = Instant::now();
    for _ in 0..3 {
        store.insert(stream_ok(t0));
    }
    store.flush().unwrap();
    for _ in 0..2 {
        store.insert(stream_ok(t0));
    }
    std::thread::sleep(ms(100)); // let the writer open a transaction with the two rows
    std::process::abort();
}

#[test]
fn a_killed_process_leaves_the_committed_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::tests::crash_child",
            "--ignored",
            "--nocapture",
        ])
        .env("LLMPERF_STORE_CRASH_DB", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child must die mid-run");
    let c = Connection::open(&path).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(
        count(&path),
        3,
        "committed rows survive; the open transaction is rolled back"
    );
}

#[test]
fn store_can_be_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Store>();
}

#[test]
fn the_database_appears_with_its_table_and_no_staging_file_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 10).unwrap();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["benchmark_data.db".to_string()]);
    let conn =
        Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM result", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0, "the table exists from the first moment");
    store.finish().unwrap();
}
