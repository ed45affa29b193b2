//! Unit tests of the run's summary file: the metrics message, evalscope's key order and llmperf's extra
//! keys after it, each with Python's float text.

use serde_json::Value;

use crate::metrics::client::{ClientDiagnostics, FromSchedule};
use crate::metrics::goodput::{GoodputSummary, SloMetric};
use crate::metrics::summary::*;

#[test]
fn pynum_keeps_python_int_sentinels() {
    assert_eq!(PyNum::Int(-1).round(4), PyNum::Int(-1));
    assert_eq!(PyNum::Int(-1).ms(), PyNum::Int(-1000));
    assert_eq!(PyNum::Float(0.0622499).ms(), PyNum::Float(62.25));
    assert_eq!(PyNum::Float(1.23456).round(4), PyNum::Float(1.2346));
}

#[test]
fn log_message_is_python_indent2() {
    let msg: Message = vec![
        (keys::TEST_DURATION, PyNum::Float(0.2339)),
        (keys::CONCURRENCY, PyNum::Int(2)),
        (keys::AVG_LATENCY, PyNum::Int(-1)),
        (keys::AVG_ITL, PyNum::Float(0.0)),
    ];
    assert_eq!(
        message_json_indent2(&msg),
        "{\n  \"Test Duration (s)\": 0.2339,\n  \"Concurrency\": 2,\n  \"Avg Latency (s)\": -1,\n  \"Avg ITL (ms)\": 0.0\n}"
    );
    assert_eq!(message_json_indent2(&Vec::new()), "{}");
}

#[test]
fn missing_keys_default_and_extras_follow_evalscope_keys() {
    let msg: Message = vec![
        (keys::CONCURRENCY, PyNum::Int(4)),
        (keys::AVG_LATENCY, PyNum::Int(-1)),
    ];
    let extras = SummaryExtras {
        interrupted: true,
        failures_by_kind: vec![("http_status".into(), 3), ("timeout".into(), 1)],
        first_errors: Vec::new(),
        wall_input_throughput: None,
        client: None,
        input_token_error: None,
        goodput: None,
        load: None,
        phases: None,
        plateau: None,
        appended: Vec::new(),
    };
    let s = BenchmarkSummary::from_message(&msg, extras);
    assert_eq!(s.concurrency, 4);
    assert_eq!(s.avg_latency_s, -1.0);
    assert_eq!(s.input_throughput, 0.0);
    let text = s.to_json_string();
    assert!(text.contains("    \"Avg Latency (s)\": -1.0,\n"));
    assert!(text.ends_with(
        "    \"Input Throughput (tok/s)\": 0.0,\n    \"Interrupted\": true,\n    \"Failures By Kind\": {\n        \"http_status\": 3,\n        \"timeout\": 1\n    }\n}"
    ));
}

/// evalscope's summary keys in evalscope's order (`BenchmarkSummary` of evalscope 1.14.1, with the
/// PD, multi-turn and speculative-decoding keys where evalscope inserts them).
const EVALSCOPE_ORDER: [&str; 27] = [
    keys::TEST_DURATION,
    keys::CONCURRENCY,
    keys::REQUEST_RATE,
    keys::TOTAL_REQUESTS,
    keys::SUCCESS_REQUESTS,
    keys::FAILED_REQUESTS,
    keys::STREAM_REQUESTS,
    keys::NON_STREAM_REQUESTS,
    keys::REQ_THROUGHPUT,
    keys::AVG_LATENCY,
    keys::AVG_INPUT_TOKENS,
    keys::OUTPUT_THROUGHPUT,
    keys::TOTAL_THROUGHPUT,
    keys::AVG_TTFT,
    keys::AVG_TPOT,
    keys::AVG_ITL,
    keys::AVG_STEADY_ITL,
    keys::AVG_PD_HANDOFF_LATENCY,
    keys::AVG_PD_HANDOFF_OVERHEAD,
    keys::AVG_OUTPUT_TOKENS,
    keys::INPUT_THROUGHPUT,
    keys::AVG_TURNS,
    keys::KV_CACHE_HIT_RATE,
    keys::AVG_FIRST_TURN_TTFT,
    keys::AVG_LATER_TURN_TTFT,
    keys::AVG_DECODED_TOK_PER_ITER,
    keys::SPEC_ACCEPT_RATE,
];

fn parsed(text: &str) -> Vec<(String, Value)> {
    let v: serde_json::Map<String, Value> = serde_json::from_str(text).unwrap();
    v.into_iter().collect()
}

#[test]
fn every_message_key_is_a_field_written_in_evalscope_order() {
    // Whole numbers for the count keys (they are u64 fields), fractions elsewhere.
    let message: Message = EVALSCOPE_ORDER
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let v = if (3..=7).contains(&i) || i == 1 {
                PyNum::Int(i as i64 + 1)
            } else {
                PyNum::Float(i as f64 + 0.25)
            };
            (k, v)
        })
        .collect();
    let text = BenchmarkSummary::from_message(&message, SummaryExtras::default()).to_json_string();
    let got = parsed(&text);
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, EVALSCOPE_ORDER);
    for ((key, value), (_, want)) in got.iter().zip(&message) {
        assert_eq!(value.as_f64(), Some(want.as_f64()), "{key}");
        let int_key = matches!(want, PyNum::Int(_));
        assert_eq!(value.is_f64(), !int_key, "{key}: {value}");
    }
    // Python's float repr, indent 4, no trailing newline.
    assert!(text.starts_with("{\n    \"Test Duration (s)\": 0.25,\n    \"Concurrency\": 2,\n"));
    assert!(
        text.ends_with("    \"Spec. Accept Rate\": 26.25\n}"),
        "{text}"
    );
}

/// A client that limited the run, with every optional key present.
fn limited_client() -> ClientDiagnostics {
    ClientDiagnostics {
        cpu_pct_one_core: 12.5,
        cpu_pct_all_cores: 1e-05,
        cpus: 8,
        sched_delay_ms: 0.5,
        busiest_thread: Some(("tokio-1".into(), 40.0)),
        send_lag_p50_ms: 0.1,
        send_lag_p99_ms: 0.2,
        read_lag_p50_ms: 0.3,
        read_lag_p99_ms: 0.4,
        from_schedule: Some(FromSchedule {
            avg_ttft_ms: 1.0,
            p50_ttft_ms: 2.0,
            p99_ttft_ms: 3.0,
            avg_latency_s: 4.0,
            p50_latency_s: 5.0,
            p99_latency_s: 6.0,
        }),
        limits: vec!["CPU".into()],
    }
}

#[test]
fn every_llmperf_extra_follows_evalscope_keys_in_order() {
    let client = limited_client();
    let extras = SummaryExtras {
        wall_input_throughput: Some(7.5),
        interrupted: true,
        failures_by_kind: vec![("timeout".into(), 2)],
        // Shown by the console and the reports, never written to benchmark_summary.json.
        first_errors: vec![crate::metrics::FirstError {
            kind: "timeout".into(),
            status: None,
            excerpt: "--total-timeout passed".into(),
        }],
        input_token_error: Some(InputTokenError {
            requests: 9,
            avg_intended: 100.0,
            avg_error: -0.5,
            max_error: -3,
            exact_pct: 50.0,
        }),
        client: Some(client.clone()),
        goodput: Some(GoodputSummary {
            slos: vec![(SloMetric::Ttft, 500.0)],
            goodput_rps: 3.25,
            attainment_pct: 75.0,
            attainment_each_pct: vec![75.0],
            good_requests: 3,
        }),
        load: None,
        phases: None,
        plateau: Some(crate::metrics::load::Plateau {
            rule: "no plateau: trace replay".into(),
            ..Default::default()
        }),
        appended: vec![("Server Avg TTFT (ms)".into(), Value::from(8.5))],
    };
    let s = BenchmarkSummary {
        avg_steady_itl_ms: Some(1.5),
        ..BenchmarkSummary::from_message(&Vec::new(), extras)
    };
    let got = parsed(&s.to_json_string());
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    let mut want: Vec<&str> = EVALSCOPE_ORDER[..16].to_vec();
    want.extend([
        keys::AVG_STEADY_ITL,
        keys::AVG_OUTPUT_TOKENS,
        keys::INPUT_THROUGHPUT,
    ]);
    want.extend([
        "Wall Input Throughput (tok/s)",
        "Interrupted",
        "Failures By Kind",
        "Avg Intended Input Tokens",
        "Avg Input Token Error",
        "Max Input Token Error",
        "Exact Input Tokens (%)",
        "Client CPU (% of one core)",
        "Client CPU (% of all cores)",
        "Client Scheduling Delay (ms)",
        "Client Busiest Thread (%)",
        "Send Lag P50 (ms)",
        "Send Lag P99 (ms)",
        "Read Lag P50 (ms)",
        "Read Lag P99 (ms)",
        "Avg TTFT From Intended Send (ms)",
        "P50 TTFT From Intended Send (ms)",
        "P99 TTFT From Intended Send (ms)",
        "Avg Latency From Intended Send (s)",
        "P50 Latency From Intended Send (s)",
        "P99 Latency From Intended Send (s)",
        "Client Limited",
        "Client Warning",
        "Goodput SLOs (ms)",
        "Goodput (req/s)",
        "SLO Attainment (%)",
        "TTFT SLO Attainment (%)",
        "Plateau Start (s)",
        "Plateau End (s)",
        "Plateau Coverage (%)",
        "Plateau Requests",
        "Plateau Request Throughput (req/s)",
        "Plateau Output Throughput (tok/s)",
        "Plateau Total Throughput (tok/s)",
        "Plateau Avg TTFT (s)",
        "Plateau P50 TTFT (s)",
        "Plateau P99 TTFT (s)",
        "Plateau Avg TPOT (s)",
        "Plateau P50 TPOT (s)",
        "Plateau P99 TPOT (s)",
        "Plateau Avg Latency (s)",
        "Plateau P50 Latency (s)",
        "Plateau P99 Latency (s)",
        "Plateau Rule",
        "Server Avg TTFT (ms)",
    ]);
    assert_eq!(names, want);
    let get = |k: &str| got.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert_eq!(get("Failures By Kind"), serde_json::json!({"timeout": 2}));
    assert_eq!(get("Max Input Token Error"), Value::from(-3));
    assert_eq!(get("Client CPU (% of all cores)"), Value::from(1e-05));
    assert_eq!(get("Client Busiest Thread (%)"), Value::from(40.0));
    assert_eq!(get("P99 Latency From Intended Send (s)"), Value::from(6.0));
    assert_eq!(
        get("Client Warning"),
        Value::from(client.warning().unwrap())
    );
    assert_eq!(get("Goodput SLOs (ms)"), serde_json::json!({"ttft": 500.0}));
    assert_eq!(get("Server Avg TTFT (ms)"), Value::from(8.5));
    assert!(s
        .to_json_string()
        .contains("\"Client CPU (% of all cores)\": 1e-05,"));
}

/// Without a TTFT from the schedule, a busiest thread or a limit, their keys are left out.
#[test]
fn client_keys_without_a_ttft_a_busiest_thread_or_a_limit_are_left_out() {
    let client = limited_client();
    let quiet = ClientDiagnostics {
        busiest_thread: None,
        from_schedule: client.from_schedule.map(|f| FromSchedule {
            avg_ttft_ms: f64::NAN,
            ..f
        }),
        limits: Vec::new(),
        ..client
    };
    let extras = SummaryExtras {
        client: Some(quiet),
        ..SummaryExtras::default()
    };
    let got = parsed(&BenchmarkSummary::from_message(&Vec::new(), extras).to_json_string());
    let names: Vec<&str> = got[18..].iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "Client CPU (% of one core)",
            "Client CPU (% of all cores)",
            "Client Scheduling Delay (ms)",
            "Send Lag P50 (ms)",
            "Send Lag P99 (ms)",
            "Read Lag P50 (ms)",
            "Read Lag P99 (ms)",
            "Client Limited",
        ]
    );
    assert_eq!(got.last().unwrap().1, Value::Bool(false));
}
