//! The simulator's Prometheus endpoint (`GET /metrics`): vLLM's metric names, filled from the simulator's
//! own counters, so a client's server-side numbers can be checked against the truth.
//!
//! Counters are plain atomics bumped once per finished generation request (and once per output frame for
//! the inter-token histogram); nothing here takes a lock. A request is counted when its last frame is
//! produced (before it is handed to the connection, as a real engine counts a request before the client
//! reads its end), or when its client leaves early (with the tokens actually sent).
//!
//! Exposed families (label `model_name`, the most recent request's model):
//! * counters `vllm:request_success_total`, `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`,
//!   `vllm:prefix_cache_queries_total` (= prompt tokens), `vllm:prefix_cache_hits_total` (the tokens its
//!   prefix cache reported cached; 0 with the cache off), `vllm:num_preemptions_total` (0);
//! * gauges `vllm:num_requests_running` (generation requests between head and last frame),
//!   `vllm:num_requests_waiting` (0: no queue), `vllm:kv_cache_usage_perc` (running / 256);
//! * histograms `vllm:time_to_first_token_seconds` (first output frame − request received),
//!   `vllm:inter_token_latency_seconds` (gaps between output frames), `vllm:e2e_request_latency_seconds`
//!   (last frame − received), `vllm:request_queue_time_seconds` (0 for every request), with vLLM's bucket
//!   bounds.
//!
//! [`MetricsFault`] makes the endpoint misbehave (404, a 10 s delay, or text that is not the exposition
//! format) so tests can prove a bad `/metrics` never fails or slows a run.

use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// How `/metrics` misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsFault {
    /// `404 Not Found`, as a server started without its metrics endpoint.
    Missing,
    /// The normal text after [`SLOW_METRICS_DELAY`].
    Slow,
    /// `200` with text that is not the Prometheus exposition format.
    Garbage,
}

/// How long a [`MetricsFault::Slow`] endpoint waits before answering.
pub const SLOW_METRICS_DELAY: Duration = Duration::from_secs(10);

impl MetricsFault {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MetricsFault::Missing => "missing",
            MetricsFault::Slow => "slow",
            MetricsFault::Garbage => "garbage",
        }
    }
}

impl FromStr for MetricsFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "missing" => Ok(MetricsFault::Missing),
            "slow" => Ok(MetricsFault::Slow),
            "garbage" => Ok(MetricsFault::Garbage),
            other => Err(format!(
                "unknown /metrics fault {other:?}: use missing, slow or garbage"
            )),
        }
    }
}

/// vLLM's bounds for `time_to_first_token_seconds`.
const TTFT_BOUNDS_S: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// vLLM's bounds for `inter_token_latency_seconds`.
const ITL_BOUNDS_S: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// vLLM's request-latency bounds (`e2e_request_latency_seconds`, `request_queue_time_seconds`).
const LATENCY_BOUNDS_S: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// The `kv_cache_usage_perc` denominator: requests that would fill the cache.
const KV_CAPACITY_REQUESTS: f64 = 256.0;

/// A lock-free histogram: one counter per bucket (not cumulative; the last is `+Inf`) and the sum in
/// nanoseconds.
#[derive(Debug)]
struct Histogram {
    bounds_s: &'static [f64],
    buckets: Vec<AtomicU64>,
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new(bounds_s: &'static [f64]) -> Self {
        Histogram {
            bounds_s,
            buckets: (0..=bounds_s.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    fn observe(&self, value_s: f64) {
        let value_s = value_s.max(0.0);
        let i = self
            .bounds_s
            .iter()
            .position(|b| value_s <= *b)
            .unwrap_or(self.bounds_s.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add((value_s * 1e9).round() as u64, Ordering::Relaxed);
    }

    fn write(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0u64;
        for (i, bucket) in self.buckets.iter().enumerate() {
            cumulative += bucket.load(Ordering::Relaxed);
            let le = match self.bounds_s.get(i) {
                Some(b) => format!("{b:?}"),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}.0");
        }
        let sum_s = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum_s:?}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}.0");
    }
}

/// What one finished generation request contributes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finished {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// First output frame − received, seconds (`None`: no token was sent).
    pub ttft_s: Option<f64>,
    /// Last frame − received, seconds.
    pub e2e_s: f64,
    /// The whole response was produced (not cut short by the client leaving).
    pub success: bool,
}

/// The simulator's server-side counters.
#[derive(Debug)]
pub(crate) struct SimMetrics {
    success: AtomicU64,
    prompt_tokens: AtomicU64,
    generation_tokens: AtomicU64,
    cached_tokens: AtomicU64,
    running: AtomicI64,
    ttft: Histogram,
    itl: Histogram,
    e2e: Histogram,
    queue: Histogram,
}

impl Default for SimMetrics {
    fn default() -> Self {
        SimMetrics {
            success: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            generation_tokens: AtomicU64::new(0),
            cached_tokens: AtomicU64::new(0),
            running: AtomicI64::new(0),
            ttft: Histogram::new(TTFT_BOUNDS_S),
            itl: Histogram::new(ITL_BOUNDS_S),
            e2e: Histogram::new(LATENCY_BOUNDS_S),
            queue: Histogram::new(LATENCY_BOUNDS_S),
        }
    }
}

impl SimMetrics {
    /// A generation request started (its head was parsed).
    pub(crate) fn started(&self) {
        self.running.fetch_add(1, Ordering::Relaxed);
        // No queue: every request is scheduled at once.
        self.queue.observe(0.0);
    }

    /// Generation requests between their head and their last frame.
    pub(crate) fn running(&self) -> i64 {
        self.running.load(Ordering::Relaxed)
    }

    /// A request's prompt tokens served from the prefix cache.
    pub(crate) fn cache_hits(&self, tokens: u64) {
        self.cached_tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// One gap between two output frames of a stream.
    pub(crate) fn token_gap(&self, gap_s: f64) {
        self.itl.observe(gap_s);
    }

    /// A generation request ended.
    pub(crate) fn finished(&self, f: Finished) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(f.prompt_tokens, Ordering::Relaxed);
        self.generation_tokens
            .fetch_add(f.completion_tokens, Ordering::Relaxed);
        if let Some(t) = f.ttft_s {
            self.ttft.observe(t);
        }
        self.e2e.observe(f.e2e_s);
        if f.success {
            self.success.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The exposition text.
    pub(crate) fn render(&self, model: &str) -> String {
        let model = model.replace('\\', "\\\\").replace('"', "\\\"");
        let labels = format!("model_name=\"{model}\"");
        let mut out = String::with_capacity(8192);
        let counters = [
            (
                "vllm:request_success_total",
                "Count of successfully processed requests.",
                self.success.load(Ordering::Relaxed),
            ),
            (
                "vllm:prompt_tokens_total",
                "Number of prefill tokens processed.",
                self.prompt_tokens.load(Ordering::Relaxed),
            ),
            (
                "vllm:generation_tokens_total",
                "Number of generation tokens processed.",
                self.generation_tokens.load(Ordering::Relaxed),
            ),
            (
                "vllm:prefix_cache_queries_total",
                "Prefix cache queries, in terms of number of queried tokens.",
                self.prompt_tokens.load(Ordering::Relaxed),
            ),
            (
                "vllm:prefix_cache_hits_total",
                "Prefix cache hits, in terms of number of cached tokens.",
                self.cached_tokens.load(Ordering::Relaxed),
            ),
            (
                "vllm:num_preemptions_total",
                "Cumulative number of preemption from the engine.",
                0,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{labels}}} {value}.0"
            );
        }
        let running = self.running.load(Ordering::Relaxed).max(0) as f64;
        let gauges = [
            (
                "vllm:num_requests_running",
                "Number of requests in model execution batches.",
                running,
            ),
            (
                "vllm:num_requests_waiting",
                "Number of requests waiting to be processed.",
                0.0,
            ),
            (
                "vllm:kv_cache_usage_perc",
                "KV-cache usage. 1 means 100 percent usage.",
                (running / KV_CAPACITY_REQUESTS).min(1.0),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{labels}}} {value:?}"
            );
        }
        let histograms = [
            (
                &self.ttft,
                "vllm:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.",
            ),
            (
                &self.itl,
                "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
            ),
            (
                &self.e2e,
                "vllm:e2e_request_latency_seconds",
                "Histogram of e2e request latency in seconds.",
            ),
            (
                &self.queue,
                "vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.",
            ),
        ];
        for (h, name, help) in histograms {
            h.write(&mut out, name, help, &labels);
        }
        out
    }
}

/// The body of a [`MetricsFault::Garbage`] endpoint: HTML, then lines no exposition parser accepts.
pub(crate) const GARBAGE_METRICS: &str =
    "<html><body>metrics moved</body></html>\n{\"vllm:num_requests_running\": 3}\nvllm:prompt_tokens_total{model_name=\"m\" 12 x\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_lines_are_cumulative_with_sum_and_count() {
        let m = SimMetrics::default();
        m.started();
        m.finished(Finished {
            prompt_tokens: 5,
            completion_tokens: 3,
            ttft_s: Some(0.03),
            e2e_s: 0.05,
            success: true,
        });
        let text = m.render("demo");
        assert!(text.contains("vllm:prompt_tokens_total{model_name=\"demo\"} 5.0"));
        assert!(text.contains("vllm:generation_tokens_total{model_name=\"demo\"} 3.0"));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"demo\",le=\"0.02\"} 0.0"
        ));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"demo\",le=\"0.04\"} 1.0"
        ));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"demo\",le=\"+Inf\"} 1.0"
        ));
        assert!(text.contains("vllm:time_to_first_token_seconds_count{model_name=\"demo\"} 1.0"));
        assert!(text.contains("vllm:num_requests_running{model_name=\"demo\"} 0.0"));
        assert_eq!("slow".parse::<MetricsFault>(), Ok(MetricsFault::Slow));
        assert!("other".parse::<MetricsFault>().is_err());
    }
}
