//! `--dataset workload_trace` through the CLI: recorded bodies sent at their recorded offsets (numeric and
//! ISO timestamps, `speed`), per-request headers, `request_id` stored, `match_output_length`,
//! `model_mapping`, no `--model`, and every bad trace line reported by number (exit 2, nothing written).

use serde_json::{json, Value};

use crate::common::{fast_sim, json_file, llmperf, ok, run_root};

fn trace_lines() -> String {
    [
        json!({"body": {"model": "a", "messages": [{"role": "user", "content": "zero"}]}, "timestamp": 100.0,
               "request_id": "r0", "completion_tokens": 3, "headers": {"X-Tenant": "t0"}}),
        json!({"body": {"model": "b", "messages": [{"role": "user", "content": "one"}], "max_tokens": 50},
               "timestamp": "1970-01-01T00:01:40.400Z", "request_id": "r1"}),
        json!({"body": "{\"model\": \"a\", \"prompt\": \"two\"}", "timestamp": "100.8", "completion_tokens": 5}),
        json!({"body": {"model": "a", "messages": [{"role": "user", "content": "three"}]}, "timestamp": 100.2,
               "request_id": "r3"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n")
}

#[test]
fn a_trace_is_replayed_at_its_offsets_with_its_headers_and_ids() {
    let sim = fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, trace_lines()).unwrap();
    let out_dir = dir.path().join("out");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let out = llmperf(
        &out_dir,
        &[
            "--url",
            &url,
            "--open-loop",
            "--dataset",
            "workload_trace",
            "--dataset-path",
            file.to_str().unwrap(),
            "--dataset-args",
            r#"{"speed": 2, "match_output_length": true, "model_mapping": {"a": "served-a"}}"#,
            "--name",
            "trace",
            "--max-tokens",
            "7",
        ],
    );
    ok(&out);
    let run = run_root(&out_dir, "trace").join("rate_-1.0_number_1000");
    let conn = rusqlite::Connection::open(run.join("benchmark_data.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT request_id, request, scheduled_time, send_time FROM result ORDER BY scheduled_time")
        .unwrap();
    let rows: Vec<(Option<String>, Value, f64, f64)> = stmt
        .query_map([], |r| {
            let body: String = r.get(1)?;
            Ok((
                r.get(0)?,
                serde_json::from_str(&body).unwrap(),
                r.get(2)?,
                r.get(3)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 4);
    let ids: Vec<Option<&str>> = rows.iter().map(|r| r.0.as_deref()).collect();
    assert_eq!(
        ids,
        vec![Some("r0"), Some("r3"), Some("r1"), None],
        "timestamp order, ids stored"
    );
    // Offsets: (t − 100) / speed 2 → 0, 0.1, 0.2, 0.4 s after the first.
    for (row, want) in rows.iter().zip([0.0, 0.1, 0.2, 0.4]) {
        let offset = row.2 - rows[0].2;
        assert!(
            (offset - want).abs() < 1e-6,
            "scheduled offset {offset} vs {want}"
        );
        assert!(row.3 - row.2 < 0.05, "sent on time: lag {}", row.3 - row.2);
    }
    assert_eq!(
        rows[0].1,
        json!({"model": "served-a", "messages": [{"role": "user", "content": "zero"}], "max_tokens": 3,
               "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0})
    );
    assert_eq!(
        rows[2].1["max_tokens"], 50,
        "the body's own value wins over --max-tokens"
    );
    assert_eq!(rows[2].1["model"], "b");
    assert_eq!(
        rows[1].1["max_tokens"], 7,
        "--max-tokens fills a missing key"
    );
    assert_eq!(rows[3].1["prompt"], "two");
    let summary = json_file(&run.join("benchmark_summary.json"));
    assert_eq!(summary["Total Requests"], 4);
    assert!(summary["Send Lag P99 (ms)"].as_f64().is_some());
    let args = json_file(&run.join("benchmark_args.json"));
    assert_eq!(args["model"], Value::Null);
    assert_eq!(args["model_id"], "workload_trace");
    let tenants: Vec<Option<String>> = sim
        .requests()
        .iter()
        .skip(1)
        .map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k == "x-tenant")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(tenants.iter().flatten().collect::<Vec<_>>(), vec!["t0"]);
}

#[test]
fn bad_traces_name_the_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"body\": {}, \"timestamp\": 1}\n{oops\n{\"body\": {\"model\": \"m\"}}\n{\"body\": {}, \"timestamp\": \"soon\"}\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let path = file.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--api",
            "mock",
            "--dataset",
            "workload_trace",
            "--dataset-path",
            path,
        ];
        args.extend(extra);
        llmperf(&out_dir, &args)
    };
    let out = run(&["--open-loop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for needle in [
        "(3 error(s))",
        "line 2: invalid JSON",
        "line 3: missing \"timestamp\"",
        "line 4: cannot parse timestamp: \"soon\"",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("workload_trace requires open-loop mode"));
    std::fs::write(&file, "{\"body\": {}, \"timestamp\": 1}\n").unwrap();
    let out = run(&["--open-loop", "--dataset-args", r#"{"sped": 2}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key \"sped\""));
    assert!(!out_dir.exists(), "no output folder");
}
