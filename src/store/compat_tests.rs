//! Compatibility tests: `response_messages` read back by a real Python (when `python3` is on PATH), the
//! schema and pickle format of evalscope's own golden database, and a rough cost measurement.

use std::path::PathBuf;
use std::time::Instant;

use base64::Engine as _;
use rusqlite::Connection;

use super::tests::{
    non_stream_ok, python, stream_ok, table_info, BODY, CHUNK_1, CHUNK_2, PY_UNPICKLE,
};
use super::*;
use crate::test_support::shared_dir;

#[test]
fn response_messages_round_trip_through_pickle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 1).unwrap();
    let t0 = Instant::now();
    store.insert(stream_ok(t0));
    store.insert(non_stream_ok(t0));
    store.finish().unwrap();

    let conn = Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare("SELECT response_messages FROM result ORDER BY rowid")
        .unwrap();
    let stored: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected = [vec![CHUNK_1, CHUNK_2], vec![BODY]];
    for (b64, chunks) in stored.iter().zip(expected) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let got: serde_json::Value = serde_pickle::from_slice(&bytes, Default::default()).unwrap();
        let want: Vec<serde_json::Value> = chunks
            .iter()
            .map(|c| serde_json::from_str(c).unwrap())
            .collect();
        assert_eq!(got, serde_json::Value::Array(want.clone()));
        // Key order survives (serde_json keeps insertion order in this crate: `preserve_order`).
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }
    if let Some(out) = python(PY_UNPICKLE, &stored[0]) {
        assert_eq!(
            out,
            r#"[{"id": "c1", "object": "chat.completion.chunk", "created": 1795972153, "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]}, {"id": "c1", "choices": [{"index": 0, "delta": {"content": " héllo"}, "logprobs": null, "finish_reason": "length", "score": 1.0, "ok": true}]}]"#
        );
    }
    if let Some(out) = python(
        "import pickle,base64,sys; l=pickle.loads(base64.b64decode(sys.stdin.read())); \
         print(type(l).__name__, type(l[0]).__name__, type(l[0]['usage']['prompt_tokens']).__name__)",
        &stored[1],
    ) {
        assert_eq!(out, "list dict int");
    }
}

fn golden_db() -> Option<PathBuf> {
    let outputs = shared_dir().join("reference/evalscope-golden/a_seed/outputs");
    let entries = match std::fs::read_dir(&outputs) {
        Ok(e) => e,
        Err(_) => {
            eprintln!(
                "note: {} not found; skipping the golden-DB check",
                outputs.display()
            );
            return None;
        }
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            e.path()
                .join("test1/parallel_1_number_20/benchmark_data.db")
        })
        .find(|p| p.is_file())
}

#[test]
fn matches_the_golden_evalscope_db() {
    let Some(golden) = golden_db() else { return };
    let conn =
        Connection::open_with_flags(&golden, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let golden_cols = table_info(&conn);
    assert_eq!(golden_cols.len(), 14);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    Store::create(&path, 10).unwrap().finish().unwrap();
    let ours = table_info(&Connection::open(&path).unwrap());
    assert_eq!(ours[..14], golden_cols[..]);

    // evalscope's response_messages: a protocol-4 pickle of a list of chunk dicts. serde_pickle reads it;
    // re-encoding those chunks with our encoder must give Python the very same objects.
    let b64: String = conn
        .query_row(
            "SELECT response_messages FROM result WHERE success = 1 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&b64)
        .unwrap();
    let golden_list: serde_json::Value =
        serde_pickle::from_slice(&bytes, Default::default()).unwrap();
    let chunks: Vec<Vec<u8>> = golden_list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::to_vec(c).unwrap())
        .collect();
    assert!(chunks.len() > 1 && golden_list[0]["choices"].is_array());
    let mut enc = pickle::Encoder::default();
    let ours_b64 =
        String::from_utf8(enc.encode(chunks.iter().map(Vec::as_slice)).to_vec()).unwrap();
    if let (Some(theirs), Some(mine)) = (python(PY_UNPICKLE, &b64), python(PY_UNPICKLE, &ours_b64))
    {
        assert_eq!(mine, theirs);
        let from_python: serde_json::Value = serde_json::from_str(&theirs).unwrap();
        assert_eq!(from_python, golden_list);
    }
}

/// Rough cost per record: `cargo test --release --lib store::compat_tests::cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn cost_per_record() {
    let t0 = Instant::now();
    let mut rec = stream_ok(t0);
    for _ in 0..127 {
        rec.keep_response(CHUNK_2.as_bytes());
    }
    let mut enc = pickle::Encoder::default();
    let n = 20_000;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(enc.encode(rec.responses()));
    }
    let per = start.elapsed() / n;
    eprintln!(
        "encode 129 chunks ({} B JSON): {per:?} per record",
        rec.response_bytes.len()
    );
    let start = Instant::now();
    for _ in 0..n {
        for p in rec.responses() {
            std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(p).is_ok());
        }
    }
    eprintln!("  of which JSON parsing alone: {:?}", start.elapsed() / n);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark_data.db");
    let store = Store::create(&path, 1000).unwrap();
    let start = Instant::now();
    for _ in 0..n {
        store.insert(stream_ok(t0));
    }
    store.finish().unwrap();
    eprintln!(
        "insert+commit small stream records: {:?} per record",
        start.elapsed() / n
    );
}
