//! `--dataset workload_trace` through the CLI: recorded bodies sent at their recorded offsets (numeric and
//! ISO timestamps, `speed`), per-request headers, `request_id` stored, `match_output_length`,
//! `model_mapping`, no `--model`, and every bad trace line reported by number (exit 2, nothing written).

use serde_json::{json, Value};

use crate::common::{fast_sim, Run};

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
    // No --model: each request keeps its trace's model (mapped by model_mapping).
    let run = Run::new()
        .flag("--url", format!("{}/v1/chat/completions", sim.base_url()))
        .flags("--open-loop --dataset workload_trace")
        .input("--dataset-path", "trace.jsonl", trace_lines())
        .flags(r#"--dataset-args '{"speed": 2, "match_output_length": true, "model_mapping": {"a": "served-a"}}'"#)
        .flags("--name trace --max-tokens 7")
        .ok_dir("rate_-1.0_number_1000");
    let conn = rusqlite::Connection::open(run.db()).unwrap();
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
        // Never before its time; how late is the client's own delay, which the summary reports.
        assert!(row.3 >= row.2, "sent early: {row:?}");
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
    let summary = run.summary();
    assert_eq!(summary["Total Requests"], 4);
    assert!(summary["Send Lag P99 (ms)"].as_f64().is_some());
    let args = run.args();
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
    let run = |extra: &str| {
        let run = Run::new()
            .flags("--api mock --dataset workload_trace")
            .flag("--dataset-path", &file)
            .flags(extra);
        let stderr = run.fails(2);
        assert_eq!(run.out_entries(), 0, "{extra}: no output folder");
        stderr
    };
    let stderr = run("--open-loop");
    for needle in [
        "(3 error(s))",
        "line 2: invalid JSON",
        "line 3: missing \"timestamp\"",
        "line 4: cannot parse timestamp: \"soon\"",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(run("").contains("workload_trace requires open-loop mode"));
    std::fs::write(&file, "{\"body\": {}, \"timestamp\": 1}\n").unwrap();
    assert!(run(r#"--open-loop --dataset-args '{"sped": 2}'"#).contains("unknown key \"sped\""));
}
