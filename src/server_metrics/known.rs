//! Known metric names of vLLM, SGLang, llama.cpp (`--metrics`), TGI and the NVIDIA DCGM exporter, grouped
//! by what they mean, and the summary keys computed from them. Names move between server releases: each
//! meaning lists every spelling known (first found wins); anything else stays in `server_metrics.json`
//! under its own name only.

/// Counters: (summary key, candidates); a candidate is a group of families whose deltas add up (llama.cpp
/// counts cached prompt tokens apart from processed ones; vLLM and SGLang count every prompt token).
pub const COUNTERS: &[(&str, &[&[&str]])] = &[
    (
        "Server Requests",
        &[
            &["vllm:request_success_total"],
            &["sglang:num_requests_total"],
            &["tgi_request_success"],
        ],
    ),
    (
        "Server Prompt Tokens",
        &[
            &["vllm:prompt_tokens_total"],
            &["sglang:prompt_tokens_total"],
            &[
                "llamacpp:prompt_tokens_total",
                "llamacpp:prompt_tokens_cached_total",
            ],
        ],
    ),
    (
        "Server Generation Tokens",
        &[
            &["vllm:generation_tokens_total"],
            &["sglang:generation_tokens_total"],
            &["llamacpp:tokens_predicted_total"],
        ],
    ),
    ("Server Preemptions", &[&["vllm:num_preemptions_total"]]),
];

/// Prefix cache: (families whose deltas add up to the prompt tokens queried, the family of tokens hit).
pub const PREFIX_CACHE: &[(&[&str], &str)] = &[
    (
        &["vllm:prefix_cache_queries_total"],
        "vllm:prefix_cache_hits_total",
    ),
    (
        &["vllm:gpu_prefix_cache_queries_total"],
        "vllm:gpu_prefix_cache_hits_total",
    ),
    (
        &[
            "llamacpp:prompt_tokens_total",
            "llamacpp:prompt_tokens_cached_total",
        ],
        "llamacpp:prompt_tokens_cached_total",
    ),
];

/// Speculative decoding: (prefix) of `spec_decode_num_drafts_total`, `…_num_draft_tokens_total`,
/// `…_num_accepted_tokens_total`.
pub const SPEC_DECODE_PREFIXES: &[&str] = &["vllm:", "llamacpp:"];

/// Gauges: (summary key stem, candidate families, scale to the reported unit, how series combine).
pub const GAUGES: &[(&str, &[&str], f64, Combine)] = &[
    (
        "Running Requests",
        &[
            "vllm:num_requests_running",
            "sglang:num_running_reqs",
            "llamacpp:requests_processing",
            "tgi_batch_current_size",
        ],
        1.0,
        Combine::Sum,
    ),
    (
        "Waiting Requests",
        &[
            "vllm:num_requests_waiting",
            "sglang:num_queue_reqs",
            "llamacpp:requests_deferred",
            "tgi_queue_size",
        ],
        1.0,
        Combine::Sum,
    ),
    (
        "KV Cache Usage (%)",
        &[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
        ],
        100.0,
        Combine::Max,
    ),
    (
        "GPU Utilization (%)",
        &["DCGM_FI_DEV_GPU_UTIL"],
        1.0,
        Combine::Mean,
    ),
    (
        "GPU Power (W)",
        &["DCGM_FI_DEV_POWER_USAGE"],
        1.0,
        Combine::Sum,
    ),
    (
        "GPU Memory Used (MiB)",
        &["DCGM_FI_DEV_FB_USED"],
        1.0,
        Combine::Sum,
    ),
];

/// The GPU power gauge (W), integrated over time when no energy counter is exposed.
pub const POWER_GAUGE: &str = "DCGM_FI_DEV_POWER_USAGE";
/// DCGM's energy counter (mJ since boot).
pub const ENERGY_COUNTER_MJ: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";

/// How the series of one gauge family (several GPUs, engines or models) combine at each scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Total (requests, watts, memory).
    Sum,
    /// Mean (utilisation).
    Mean,
    /// Largest (cache usage: the fullest engine).
    Max,
}

/// Histograms: (summary key stem, candidate families).
pub const HISTOGRAMS: &[(&str, &[&str])] = &[
    (
        "TTFT",
        &[
            "vllm:time_to_first_token_seconds",
            "sglang:time_to_first_token_seconds",
        ],
    ),
    (
        "ITL",
        &[
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds",
            "tgi_request_mean_time_per_token_duration",
        ],
    ),
    (
        "E2E Latency",
        &[
            "vllm:e2e_request_latency_seconds",
            "sglang:e2e_request_latency_seconds",
            "tgi_request_duration",
        ],
    ),
    (
        "Queue Time",
        &[
            "vllm:request_queue_time_seconds",
            "tgi_request_queue_duration",
        ],
    ),
];

/// The quantiles reported for each known histogram.
pub const QUANTILES: &[(&str, f64)] = &[("P50", 0.5), ("P90", 0.9), ("P99", 0.99)];
