//! Edge cases of the accumulator fed with real [`RequestRecord`]s: all-failed and empty runs, warmup
//! exclusion, non-stream and mixed runs, the optional keys (KV cache, speculative decoding), the extras
//! and the periodic log message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Accumulator, SummaryContext, PERCENTILE_LABELS};
use crate::record::{FailureKind, RequestRecord};

const LLM: SummaryContext = SummaryContext {
    concurrency_as_written: 2,
    rate_as_written: -1.0,
    input_only: false,
    pd_metrics: false,
};

/// A test record builder: times are milliseconds after a common origin.
struct Rec {
    r: RequestRecord,
    t0: Instant,
}

impl Rec {
    fn new(t0: Instant, start_ms: u64, end_ms: u64, stream: bool) -> Self {
        let mut r = RequestRecord::new(0, false, Arc::from("{}"), t0);
        r.sent_at = t0 + Duration::from_millis(start_ms);
        r.completed_at = t0 + Duration::from_millis(end_ms);
        r.is_stream = stream;
        Rec { r, t0 }
    }

    fn ok(mut self, prompt: u64, completion: u64) -> Self {
        self.r.success = true;
        self.r.usage.prompt_tokens = Some(prompt);
        self.r.usage.completion_tokens = Some(completion);
        self
    }

    fn chunks(mut self, ms: &[u64]) -> Self {
        self.r.chunk_times = ms
            .iter()
            .map(|&m| self.t0 + Duration::from_millis(m))
            .collect();
        self.r.n_decode_chunks = ms.len() as u32;
        self
    }

    fn failed(mut self, kind: FailureKind) -> Self {
        let at = self.r.completed_at;
        self.r.fail(kind, "boom", at);
        self
    }
}

fn origin() -> Instant {
    // Far enough from the clock's origin that every monotonic stamp is positive.
    Instant::now() + Duration::from_secs(1)
}

#[test]
fn all_failed_run_uses_sentinels() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    acc.add(&Rec::new(t0, 0, 500, true).failed(FailureKind::Timeout).r);
    acc.add(
        &Rec::new(t0, 100, 1000, true)
            .failed(FailureKind::HttpStatus)
            .r,
    );
    acc.add(
        &Rec::new(t0, 200, 300, true)
            .failed(FailureKind::HttpStatus)
            .r,
    );
    assert_eq!((acc.total(), acc.succeeded(), acc.failed()), (3, 0, 3));

    let s = acc.summary();
    assert_eq!(s.test_duration_s, 1.0);
    assert_eq!((s.stream_requests, s.non_stream_requests), (3, 0));
    assert_eq!(s.req_throughput, 0.0);
    assert_eq!(s.output_throughput, 0.0);
    assert_eq!(s.total_throughput, 0.0);
    assert_eq!(s.avg_latency_s, -1.0);
    assert_eq!(s.avg_input_tokens, -1.0);
    assert_eq!(s.avg_output_tokens, -1.0);
    // evalscope rounds `-1 * 1000` for the (ms) keys.
    assert_eq!(s.avg_ttft_ms, -1000.0);
    assert_eq!(s.avg_tpot_ms, -1000.0);
    assert_eq!(s.avg_itl_ms, 0.0);
    assert_eq!(
        s.extras.failures_by_kind,
        vec![("http_status".to_string(), 2), ("timeout".to_string(), 1)]
    );
    let text = s.to_json_string();
    assert!(text.contains("    \"Avg Latency (s)\": -1.0,\n"));
    assert!(text.contains("    \"Avg TTFT (ms)\": -1000.0,\n"));

    // The raw log message keeps Python's int sentinels.
    let log = acc.running_log_json();
    assert!(log.contains("\n  \"Req Throughput (req/s)\": 0.0,\n  \"Avg Latency (s)\": -1,\n"));
    assert!(log.contains("\n  \"Avg TTFT (ms)\": -1000,\n"));

    let p = acc.percentiles();
    assert_eq!(p.columns.len(), 9);
    assert!(p.columns.iter().all(|(_, v)| v.iter().all(|x| x.is_nan())));
    let text = p.to_json_string();
    assert_eq!(text.matches("NaN").count(), 9 * PERCENTILE_LABELS.len());
    assert!(text.contains("\"Latency (s)\": NaN,"));
}

#[test]
fn empty_run_has_unit_duration_and_no_failures_key() {
    let acc = Accumulator::new(LLM);
    let s = acc.summary();
    assert_eq!(s.test_duration_s, 1.0);
    assert_eq!(
        (s.total_requests, s.success_requests, s.failed_requests),
        (0, 0, 0)
    );
    assert_eq!(s.req_throughput, 0.0);
    assert_eq!(s.avg_latency_s, -1.0);
    let text = s.to_json_string();
    assert!(text.ends_with("    \"Input Throughput (tok/s)\": 0.0\n}"));
    assert!(!text.contains("Failures"));
    assert!(acc
        .percentiles()
        .to_json_string()
        .contains("\"TTFT (ms)\": NaN"));
}

#[test]
fn warmup_records_are_ignored_entirely() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    let mut warm = Rec::new(t0, 0, 5000, true)
        .ok(10, 3)
        .chunks(&[50, 60, 70])
        .r;
    warm.is_warmup = true;
    acc.add(&warm);
    acc.add(
        &Rec::new(t0, 1000, 1100, true)
            .ok(10, 3)
            .chunks(&[1050, 1070, 1090])
            .r,
    );
    let s = acc.summary();
    assert_eq!(s.total_requests, 1);
    assert_eq!(s.test_duration_s, 0.1);
    assert_eq!(s.avg_ttft_ms, 50.0);
}

/// Warmup requests count in flight for the load verdict: a single one as itself, a multi-turn warmup
/// conversation as one span from its first send to its last end (its think time holds the slot).
#[test]
fn warmup_spans_keep_requests_and_join_conversations() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    let warm = |from_ms, to_ms, turn: Option<(u64, u32)>| {
        let mut r = Rec::new(t0, from_ms, to_ms, true)
            .ok(10, 1)
            .chunks(&[from_ms + 1])
            .r;
        r.is_warmup = true;
        r.turn = turn.map(|(conversation, turn_index)| crate::record::TurnTag {
            conversation,
            turn_index,
            is_last: false,
            cached_tokens: None,
        });
        r
    };
    acc.add(&warm(0, 100, None));
    acc.add(&warm(0, 200, Some((3, 0))));
    acc.add(&warm(700, 900, Some((3, 1))));
    let spans = acc.warmup_spans();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let lengths: Vec<f64> = spans.iter().map(|(a, b)| ((b - a) * 1e3).round()).collect();
    assert_eq!(lengths, [100.0, 900.0]);
}

#[test]
fn stream_run_matches_hand_computation() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    // TTFT 50 ms, ITL 10/20 ms, latency 100 ms, TPOT (100-50)/(3-1) = 25 ms.
    acc.add(&Rec::new(t0, 0, 100, true).ok(7, 3).chunks(&[50, 60, 80]).r);
    // TTFT 30 ms, ITL 30 ms, latency 100 ms, TPOT (100-30)/(2-1) = 70 ms.
    acc.add(&Rec::new(t0, 100, 200, true).ok(9, 2).chunks(&[130, 160]).r);
    // One token: counts for TTFT, not for TPOT.
    acc.add(&Rec::new(t0, 150, 400, true).ok(8, 1).chunks(&[170]).r);
    let s = acc.summary();
    assert_eq!(s.test_duration_s, 0.4);
    assert_eq!(s.req_throughput, 7.5);
    assert_eq!(s.avg_latency_s, 0.15);
    assert_eq!(s.avg_input_tokens, 8.0);
    assert_eq!(s.avg_output_tokens, 2.0);
    assert_eq!(s.output_throughput, 15.0);
    assert_eq!(s.total_throughput, 75.0);
    assert_eq!(s.avg_ttft_ms, 33.33);
    assert_eq!(s.avg_tpot_ms, 47.5);
    assert_eq!(s.avg_itl_ms, 20.0);
    assert_eq!(s.kv_cache_hit_rate_pct, None);
    assert_eq!(s.avg_decoded_tokens_per_iter, None);

    let p = acc.percentiles();
    assert_eq!(p.column("TTFT (ms)").unwrap()[0], 20.0);
    assert_eq!(p.column("TTFT (ms)").unwrap()[10], 50.0);
    assert_eq!(p.column("TPOT (ms)").unwrap()[0], 25.0);
    assert_eq!(p.column("ITL (ms)").unwrap()[5], 20.0);
    assert_eq!(p.column("Decode (tok/s)").unwrap()[10], 40.0);
    let keys: Vec<&str> = p.columns.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "Latency (s)",
            "TTFT (ms)",
            "ITL (ms)",
            "TPOT (ms)",
            "Input tokens",
            "Output tokens",
            "Output (tok/s)",
            "Total (tok/s)",
            "Decode (tok/s)"
        ]
    );
}

#[test]
fn non_stream_only_run_uses_latency_as_ttft() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    acc.add(&Rec::new(t0, 0, 200, false).ok(7, 5).r);
    acc.add(&Rec::new(t0, 0, 400, false).ok(7, 5).r);
    let s = acc.summary();
    assert_eq!((s.stream_requests, s.non_stream_requests), (0, 2));
    assert_eq!(s.avg_ttft_ms, 300.0);
    assert_eq!(s.avg_tpot_ms, 0.0);
    assert_eq!(s.avg_itl_ms, 0.0);
    let p = acc.percentiles();
    assert_eq!(p.column("TTFT (ms)").unwrap()[10], 400.0);
    assert_eq!(p.column("TPOT (ms)").unwrap(), &[0.0; 11]);
    assert!(p.column("ITL (ms)").unwrap()[0].is_nan());
    assert!(p.column("Decode (tok/s)").unwrap()[0].is_nan());
    let log = acc.running_log_json();
    assert!(log.contains("\n  \"Avg TPOT (ms)\": 0.0,\n  \"Avg ITL (ms)\": 0.0,\n"));
}

#[test]
fn mixed_run_takes_ttft_from_stream_requests_only() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    acc.add(&Rec::new(t0, 0, 100, true).ok(7, 3).chunks(&[40, 70, 90]).r);
    acc.add(&Rec::new(t0, 0, 900, false).ok(7, 3).r);
    acc.add(&Rec::new(t0, 0, 50, false).failed(FailureKind::Connect).r);
    let s = acc.summary();
    assert_eq!((s.stream_requests, s.non_stream_requests), (1, 2));
    assert_eq!(s.avg_ttft_ms, 40.0);
    assert_eq!(s.avg_latency_s, 0.5);
    assert_eq!(s.extras.failures_by_kind, vec![("connect".to_string(), 1)]);
    assert_eq!(acc.percentiles().column("TTFT (ms)").unwrap(), &[40.0; 11]);
}

#[test]
fn cached_tokens_add_kv_cache_hit_rate() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    let mut a = Rec::new(t0, 0, 100, false).ok(100, 2).r;
    a.usage.cached_tokens = Some(25);
    let mut b = Rec::new(t0, 0, 100, false).ok(300, 2).r;
    b.usage.cached_tokens = Some(0);
    acc.add(&a);
    acc.add(&b);
    acc.add(&Rec::new(t0, 0, 100, false).ok(1000, 2).r); // no cached_tokens: not in the ratio
    let s = acc.summary();
    assert_eq!(s.kv_cache_hit_rate_pct, Some(6.25));
    let text = s.to_json_string();
    assert!(text.ends_with(
        "    \"Input Throughput (tok/s)\": 0.0,\n    \"KV Cache Hit Rate (%)\": 6.25\n}"
    ));
    assert!(acc
        .running_log_json()
        .contains("\"KV Cache Hit Rate (%)\": 6.25\n}"));
}

#[test]
fn multi_token_chunks_add_speculative_decoding_keys() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    // 9 tokens in 3 chunks: (9 - 1) / (3 - 1) = 4 tokens per iteration, accept rate 1 - 1/4.
    acc.add(&Rec::new(t0, 0, 100, true).ok(5, 9).chunks(&[50, 70, 90]).r);
    let s = acc.summary();
    assert_eq!(s.avg_decoded_tokens_per_iter, Some(4.0));
    assert_eq!(s.spec_accept_rate, Some(0.75));
    assert!(s
        .to_json_string()
        .ends_with("    \"Avg Decoded Tok/Iter\": 4.0,\n    \"Spec. Accept Rate\": 0.75\n}"));
}

#[test]
fn input_only_run_reports_input_throughput() {
    let ctx = SummaryContext {
        concurrency_as_written: -1,
        rate_as_written: 20.0,
        input_only: true,
        pd_metrics: false,
    };
    let t0 = origin();
    let mut acc = Accumulator::new(ctx);
    acc.add(&Rec::new(t0, 0, 100, false).ok(10, 0).r);
    acc.add(&Rec::new(t0, 100, 400, false).ok(30, 0).r);
    let s = acc.summary();
    assert_eq!((s.concurrency, s.request_rate), (-1, 20.0));
    // Σtokens / Σlatency = 40 / 0.4; wall clock: 40 / 0.4 s as well here.
    assert_eq!(s.input_throughput, 100.0);
    assert_eq!(s.extras.wall_input_throughput, Some(100.0));
    assert_eq!(
        (s.avg_ttft_ms, s.output_throughput, s.avg_output_tokens),
        (0.0, 0.0, 0.0)
    );
    let log = acc.running_log_json();
    assert!(log.contains("\"Concurrency\": -1,\n  \"Request Rate (req/s)\": 20.0,"));
    assert!(log.ends_with("\"Avg Input Tokens\": 20.0,\n  \"Input Throughput (tok/s)\": 100.0\n}"));
    let text = s.to_json_string();
    assert!(text.ends_with(
        "    \"Input Throughput (tok/s)\": 100.0,\n    \"Wall Input Throughput (tok/s)\": 100.0\n}"
    ));
    let p = acc.percentiles();
    assert_eq!(p.column("Input (tok/s)").unwrap()[0], 100.0);
    assert!(p.column("TTFT (ms)").is_none());
}

#[test]
fn interrupted_flag_is_written_after_evalscope_keys() {
    let t0 = origin();
    let mut acc = Accumulator::new(LLM);
    acc.add(&Rec::new(t0, 0, 100, true).failed(FailureKind::Cancelled).r);
    acc.mark_interrupted();
    let text = acc.summary().to_json_string();
    assert!(text.ends_with(
        "    \"Interrupted\": true,\n    \"Failures By Kind\": {\n        \"cancelled\": 1\n    }\n}"
    ));
}
