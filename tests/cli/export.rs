//! `llmperf export --format vllm-bench` and `--save-format vllm-bench`: `vllm bench serve`'s result keys,
//! each recomputed here from the stored rows under vLLM's definitions (a stream without an output chunk
//! failed; E2EL to the last output chunk; TPOT over requests with more than one output token; numpy's
//! mean, median, population std and linearly interpolated percentiles).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// numpy's `np.percentile` (linear) of `v` (`[0]` when empty, as vLLM's `values or 0`).
fn np_percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (s.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (rank - lo as f64)
}

fn np_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn np_std(v: &[f64]) -> f64 {
    let m = np_mean(v);
    (np_mean(&v.iter().map(|x| (x - m).powi(2)).collect::<Vec<_>>())).sqrt()
}

fn close(key: &str, got: &Value, want: f64) {
    let g = got.as_f64().unwrap_or_else(|| panic!("{key}: {got}"));
    assert!(
        (g - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{key}: exported {g}, recomputed {want}"
    );
}

/// Recomputes every value of `result` from `rows` under vLLM's definitions.
fn assert_recount(result: &Value, rows: &[Row]) {
    let ok: Vec<&Row> = rows
        .iter()
        .filter(|r| r.success && (!r.is_stream || r.ttft.unwrap_or(0.0) > 0.0))
        .collect();
    let e2el = |r: &Row| {
        if r.is_stream {
            r.ttft.unwrap() + r.itl.iter().sum::<f64>()
        } else {
            r.latency.unwrap()
        }
    };
    let output = |r: &Row| r.completion_tokens.filter(|&n| n > 0).unwrap_or(1) as f64;
    let first = rows
        .iter()
        .map(|r| r.start_time)
        .fold(f64::INFINITY, f64::min);
    let last = rows
        .iter()
        .map(|r| r.completed_time)
        .fold(f64::NEG_INFINITY, f64::max);
    let duration = last - first;
    let input: f64 = ok.iter().map(|r| r.prompt_tokens.unwrap() as f64).sum();
    let out: f64 = ok.iter().map(|r| output(r)).sum();
    assert_eq!(result["completed"], ok.len());
    assert_eq!(result["failed"], rows.len() - ok.len());
    close("duration", &result["duration"], duration);
    close("total_input_tokens", &result["total_input_tokens"], input);
    close("total_output_tokens", &result["total_output_tokens"], out);
    close(
        "request_throughput",
        &result["request_throughput"],
        ok.len() as f64 / duration,
    );
    close(
        "output_throughput",
        &result["output_throughput"],
        out / duration,
    );
    close(
        "total_token_throughput",
        &result["total_token_throughput"],
        (input + out) / duration,
    );
    let ttft: Vec<f64> = ok.iter().map(|r| r.ttft.unwrap()).collect();
    let tpot: Vec<f64> = ok
        .iter()
        .filter(|r| output(r) > 1.0)
        .map(|r| (e2el(r) - r.ttft.unwrap()) / (output(r) - 1.0))
        .collect();
    let itl: Vec<f64> = ok.iter().flat_map(|r| r.itl.clone()).collect();
    let e2e: Vec<f64> = ok.iter().map(|r| e2el(r)).collect();
    for (name, v) in [
        ("ttft", &ttft),
        ("tpot", &tpot),
        ("itl", &itl),
        ("e2el", &e2e),
    ] {
        close(name, &result[format!("mean_{name}_ms")], np_mean(v) * 1e3);
        close(
            name,
            &result[format!("median_{name}_ms")],
            np_percentile(v, 50.0) * 1e3,
        );
        close(name, &result[format!("std_{name}_ms")], np_std(v) * 1e3);
        for p in [50, 90, 95, 99] {
            let key = format!("p{p}_{name}_ms");
            close(&key, &result[&key], np_percentile(v, p as f64) * 1e3);
        }
    }
    // Peak chunks in a wall-clock second, and peak requests in flight.
    let t0 = ok
        .iter()
        .map(|r| r.start_time)
        .fold(f64::INFINITY, f64::min);
    let mut per_second = std::collections::BTreeMap::<i64, u64>::new();
    let mut events = Vec::new();
    for r in &ok {
        let mut t = r.start_time + r.ttft.unwrap();
        *per_second.entry((t - t0) as i64).or_default() += 1;
        for g in &r.itl {
            t += g;
            *per_second.entry((t - t0) as i64).or_default() += 1;
        }
        events.push((r.start_time, 1i64));
        events.push((r.start_time + e2el(r), -1));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let peak = events
        .iter()
        .scan(0, |n, e| {
            *n += e.1;
            Some(*n)
        })
        .max()
        .unwrap_or(0);
    close(
        "max_output_tokens_per_s",
        &result["max_output_tokens_per_s"],
        per_second.values().copied().max().unwrap_or(0) as f64,
    );
    assert_eq!(result["max_concurrent_requests"], peak);
}

fn export(args: &[&Path], extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .arg("export")
        .args(args)
        .args(["--format", "vllm-bench"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn save_format_and_export_write_vllms_result_recounted_from_the_rows() {
    let run = Run::new().flags(
        "--api mock --model org/demo --name demo --prompt hello --parallel 3 --number 40 --max-tokens 6 \
         --mock-ttft-ms 8 --mock-itl-ms 2 --mock-fault http-500:9 --save-format vllm-bench --no-timestamp",
    );
    let dir = run.ok_dir("parallel_3_number_40");
    let saved = json_file(&dir.join("vllm_bench_serve.json"));
    let rows = dir.rows();
    assert!(rows.iter().any(|r| !r.success), "some failures to count");
    assert_recount(&saved, &rows);
    assert_eq!(saved["backend"], "openai-chat");
    assert_eq!(saved["model_id"], "org/demo");
    assert_eq!(saved["max_concurrency"], 3);
    assert_eq!(saved["request_rate"], "inf");
    assert_eq!(saved["num_prompts"], 40);
    assert_eq!(saved["label"], Value::Null);

    // `llmperf export` on the run root, into a folder: the same values, named as vLLM names them.
    let out = tempfile::tempdir().unwrap();
    let o = export(
        &[&run.root()],
        &["--outputs-dir", out.path().to_str().unwrap()],
    );
    let printed = ok(&o);
    let files = files_under(out.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("openai-chat-infqps-concurrency3-demo-") && name.ends_with(".json"),
        "{name}"
    );
    assert!(printed.contains(&name), "{printed}");
    let exported = json_file(&files[0]);
    for (k, v) in saved.as_object().unwrap() {
        assert_eq!(&exported[k], v, "{k}");
    }
}

#[test]
fn a_merged_sharded_run_exports_too() {
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let tmp = tempfile::tempdir().unwrap();
    let shards = tmp.path().join("shards");
    for k in 0..2 {
        let shard = format!("{k}/2");
        ok(&llmperf(
            &shards,
            &[
                "--url",
                &url,
                "--model",
                "m",
                "--prompt",
                "hi",
                "--number",
                "20",
                "--parallel",
                "2",
                "--max-tokens",
                "5",
                "--shard",
                &shard,
            ],
        ));
    }
    let merged = tmp.path().join("merged");
    ok(&Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .arg("merge")
        .arg(&shards)
        .args(["--outputs-dir", merged.to_str().unwrap()])
        .output()
        .unwrap());
    let run = merged.join("m").join("parallel_2_number_20");
    ok(&export(&[&merged.join("m")], &[]));
    let result = json_file(&run.join("vllm_bench_serve.json"));
    let rows = rows(&run.join("benchmark_data.db"));
    assert_eq!(rows.len(), 20, "both shards' rows");
    assert_recount(&result, &rows);
}

#[test]
fn what_cannot_be_exported_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = export(&[tmp.path()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no run folder"), "{}", stderr(&o));
    let o = export(&[&tmp.path().join("missing")], &[]);
    assert_eq!(o.status.code(), Some(2));
    let run = Run::new()
        .flags("--api openai_embedding --model m --prompt hi --number 2 --save-format vllm-bench");
    assert!(run.fails(2).contains("--save-format vllm-bench"));
}
