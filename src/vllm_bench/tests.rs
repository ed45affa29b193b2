use serde_json::json;

use super::*;

fn row(start: f64, ttft: Option<f64>, itl: &[f64], prompt: u64, out: u64, ok: bool) -> StoredRow {
    StoredRow {
        success: ok,
        is_stream: true,
        start_time: start,
        completed_time: start + ttft.unwrap_or(0.0) + itl.iter().sum::<f64>() + 0.001,
        latency: ttft.map(|t| t + itl.iter().sum::<f64>() + 0.001),
        ttft,
        prompt_tokens: Some(prompt),
        completion_tokens: ok.then_some(out),
        itl: itl.to_vec(),
        error: None,
        scheduled_time: None,
    }
}

fn info() -> RunInfo {
    RunInfo {
        backend: "openai-chat".into(),
        model_id: "org/m".into(),
        tokenizer_id: "org/m".into(),
        num_prompts: 4,
        request_rate: None,
        burstiness: 1.0,
        max_concurrency: Some(2),
        date: "20260101-120000".into(),
    }
}

fn close(got: &Value, want: f64) {
    let g = got.as_f64().unwrap_or(f64::NAN);
    assert!((g - want).abs() < 1e-9, "{g} != {want}");
}

#[test]
fn counts_and_statistics_follow_vllms_definitions() {
    let rows = [
        row(10.0, Some(0.1), &[0.02, 0.03], 5, 3, true),
        row(10.05, Some(0.2), &[0.05], 7, 2, true),
        row(10.1, None, &[], 9, 0, false),
        // A stream that succeeded without an output chunk: evalscope's TTFT 0, vLLM's failure.
        row(10.2, Some(0.0), &[], 4, 0, true),
    ];
    let requests: Vec<VllmRequest> = rows.iter().map(VllmRequest::from_row).collect();
    assert!(!requests[3].success);
    let r = result(&info(), &requests, 1.0);
    assert_eq!(r["completed"], json!(2));
    assert_eq!(r["failed"], json!(2));
    assert_eq!(r["total_input_tokens"], json!(12));
    assert_eq!(r["total_output_tokens"], json!(5));
    close(&r["request_throughput"], 2.0);
    close(&r["output_throughput"], 5.0);
    close(&r["total_token_throughput"], 17.0);
    assert_eq!(r["request_goodput"], Value::Null);
    close(&r["mean_ttft_ms"], 150.0);
    close(&r["median_ttft_ms"], 150.0);
    close(&r["std_ttft_ms"], 50.0);
    close(&r["p90_ttft_ms"], 190.0);
    close(&r["p99_ttft_ms"], 199.0);
    // TPOT = (E2EL - TTFT) / (output - 1), E2EL ending at the last output chunk.
    close(&r["mean_tpot_ms"], 37.5);
    close(&r["mean_itl_ms"], 100.0 / 3.0);
    close(&r["median_itl_ms"], 30.0);
    close(&r["p90_itl_ms"], 46.0);
    close(&r["mean_e2el_ms"], 200.0);
    close(&r["max_output_tokens_per_s"], 5.0);
    assert_eq!(r["max_concurrent_requests"], json!(2));
    let keys: Vec<&str> = r.keys().map(String::as_str).collect();
    assert_eq!(
        &keys[..13],
        [
            "date",
            "endpoint_type",
            "backend",
            "label",
            "model_id",
            "tokenizer_id",
            "num_prompts",
            "request_rate",
            "burstiness",
            "max_concurrency",
            "duration",
            "completed",
            "failed"
        ]
    );
    assert_eq!(keys.last(), Some(&"p99_e2el_ms"));
    assert_eq!(r["request_rate"], json!("inf"));
}

#[test]
fn a_run_with_no_success_reports_zeros() {
    let rows = [row(1.0, None, &[], 3, 0, false)];
    let requests: Vec<VllmRequest> = rows.iter().map(VllmRequest::from_row).collect();
    let r = result(&info(), &requests, 0.5);
    assert_eq!(
        (r["completed"].clone(), r["failed"].clone()),
        (json!(0), json!(1))
    );
    close(&r["mean_ttft_ms"], 0.0);
    close(&r["p99_itl_ms"], 0.0);
    assert_eq!(r["max_concurrent_requests"], json!(0));
}

#[test]
fn settings_come_from_the_run_arguments() {
    let args = |extra: Value| {
        let mut m = json!({
            "model": "Qwen/Qwen3-0.6B", "model_id": "Qwen3-0.6B", "api": "openai", "tokenizer_path": null,
            "url": "http://h:8000/v1/chat/completions", "number": 100, "parallel": 8, "rate": -1.0,
            "open_loop": false
        })
        .as_object()
        .unwrap()
        .clone();
        m.extend(extra.as_object().unwrap().clone());
        m
    };
    let i = RunInfo::from_args(&args(json!({})), "20260101-000000".into()).unwrap();
    assert_eq!(
        (i.backend.as_str(), i.max_concurrency, i.request_rate),
        ("openai-chat", Some(8), None)
    );
    assert_eq!(i.tokenizer_id, "Qwen/Qwen3-0.6B");
    assert_eq!(
        i.file_name(),
        "openai-chat-infqps-concurrency8-Qwen3-0.6B-20260101-000000.json"
    );
    let open = json!({"parallel": -1, "rate": 20.0, "open_loop": true, "burstiness": 0.5,
                      "url": "http://h/v1/completions"});
    let i = RunInfo::from_args(&args(open), "d".into()).unwrap();
    assert_eq!(
        (i.backend.as_str(), i.max_concurrency, i.request_rate),
        ("openai", None, Some(20.0))
    );
    assert_eq!(i.burstiness, 0.5);
    assert_eq!(i.file_name(), "openai-20.0qps-Qwen3-0.6B-d.json");
    let err =
        RunInfo::from_args(&args(json!({"api": "openai_embedding"})), "d".into()).unwrap_err();
    assert!(err.to_string().contains("--api openai_embedding"), "{err}");
}

/// Every key `vllm bench serve --save-result --percentile-metrics ttft,tpot,itl,e2el
/// --metric-percentiles 50,90,95,99` writes without `--save-detailed`, in its order (the setup keys of
/// `main`, then `benchmark()`'s result dict without its per-request lists, then `process_one_metric` per
/// metric: mean, median, std, percentiles), as vllm/benchmarks/serve.py spells them; `vllm bench sweep
/// plot` reads `request_throughput` and `p99_e2el_ms` by default.
#[test]
fn the_keys_are_vllms_in_vllms_order() {
    let rows = [row(10.0, Some(0.1), &[0.02, 0.03], 5, 3, true)];
    let requests: Vec<VllmRequest> = rows.iter().map(VllmRequest::from_row).collect();
    let r = result(&info(), &requests, 1.0);
    let mut want: Vec<String> = [
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
    ]
    .map(String::from)
    .to_vec();
    for metric in ["ttft", "tpot", "itl", "e2el"] {
        for stat in ["mean", "median", "std", "p50", "p90", "p95", "p99"] {
            want.push(format!("{stat}_{metric}_ms"));
        }
    }
    let got: Vec<&str> = r.keys().map(String::as_str).collect();
    assert_eq!(got, want);
    for (key, value) in &r {
        let numeric = !matches!(
            key.as_str(),
            "date"
                | "endpoint_type"
                | "backend"
                | "label"
                | "model_id"
                | "tokenizer_id"
                | "request_rate"
                | "max_concurrency"
                | "request_goodput"
        );
        if numeric {
            assert!(value.is_number(), "{key}: {value}");
        }
    }
}
