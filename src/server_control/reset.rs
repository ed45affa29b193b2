//! Resetting the server's prefix cache through its own endpoint — vLLM `POST /reset_prefix_cache`, SGLang
//! `POST /flush_cache`, llama.cpp `POST /slots/{id}?action=erase` for every slot `GET /slots` lists — with
//! the server's prefix-cache counters read from `GET /metrics` just before and just after (where it
//! exposes them).

use std::collections::BTreeMap;

use super::kind::reset_advice;
use super::outcome::ResetRecord;
use super::{ControlError, Controller, ServerKind};
use crate::clock;

/// The prefix-cache counters read from `/metrics`, where present (summed over their label sets).
pub const CACHE_COUNTERS: &[&str] = &[
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:gpu_prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_hits_total",
    "sglang:cached_tokens_total",
    "sglang:prompt_tokens_total",
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_tokens_cached_total",
];

/// The counters of [`CACHE_COUNTERS`] the server's `/metrics` shows now (empty when it has none).
pub async fn cache_counters(c: &Controller) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok((200, text)) = c.call(reqwest::Method::GET, "metrics").await else {
        return out;
    };
    let Ok(expo) = crate::server_metrics::prom::parse(&text) else {
        return out;
    };
    for name in CACHE_COUNTERS {
        let base = name.trim_end_matches("_total");
        if let Some(f) = expo.family(name).or_else(|| expo.family(base)) {
            out.insert(name.to_string(), f.samples.iter().map(|s| s.value).sum());
        }
    }
    out
}

/// Resets the prefix cache of the server `c` controls; the record says what was called, when, and the
/// counters around it. `Err` when the engine is unknown or the endpoint failed.
pub async fn reset(c: &mut Controller) -> Result<ResetRecord, ControlError> {
    let kind = c.kind().await?;
    let before = cache_counters(c).await;
    let at_s = clock::now_s();
    let endpoint = match kind {
        ServerKind::Vllm => {
            c.post_ok("reset_prefix_cache", Some(reset_advice(kind)))
                .await?;
            format!("POST {}", c.url("reset_prefix_cache"))
        }
        ServerKind::Sglang => {
            c.post_ok("flush_cache", Some(reset_advice(kind))).await?;
            format!("POST {}", c.url("flush_cache"))
        }
        ServerKind::LlamaCpp => erase_slots(c).await?,
    };
    let after = cache_counters(c).await;
    tracing::info!("Prefix cache reset: {endpoint}");
    Ok(ResetRecord {
        endpoint,
        at_s,
        done_s: clock::now_s(),
        counters_before: before,
        counters_after: after,
    })
}

/// llama.cpp: erases every slot `GET /slots` lists.
async fn erase_slots(c: &Controller) -> Result<String, ControlError> {
    let advice = Some(reset_advice(ServerKind::LlamaCpp));
    let (status, body) = c.call(reqwest::Method::GET, "slots").await?;
    let ids: Vec<u64> = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v.as_array()
                .map(|slots| slots.iter().filter_map(|s| s.get("id")?.as_u64()).collect())
        })
        .unwrap_or_default();
    if status != 200 || ids.is_empty() {
        return Err(ControlError {
            endpoint: format!("GET {}", c.url("slots")),
            answer: format!("HTTP {status}: {}", super::short(&body)),
            advice,
        });
    }
    for id in &ids {
        c.post_ok(&format!("slots/{id}?action=erase"), advice)
            .await?;
    }
    Ok(format!(
        "POST {}slots/<id>?action=erase for slots {ids:?}",
        c.origin
    ))
}
