//! Which engine serves `--url`, for its control endpoints: `GET /v1/models` names it in `owned_by`
//! (`vllm`, `sglang`, `llamacpp`; the built-in simulator's `llmperf-sim` serves vLLM's spellings), and each
//! engine's endpoints and the server settings they need.

use super::{ControlError, Controller, ServerKind};

/// The engine named by a `/v1/models` answer's first `owned_by`, if it is one llmperf knows.
pub fn from_models(body: &str) -> Option<ServerKind> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let owner = v.get("data")?.get(0)?.get("owned_by")?.as_str()?;
    match owner.to_ascii_lowercase().as_str() {
        "vllm" | "llmperf-sim" => Some(ServerKind::Vllm),
        "sglang" => Some(ServerKind::Sglang),
        "llamacpp" | "llama.cpp" => Some(ServerKind::LlamaCpp),
        _ => None,
    }
}

/// Asks the server (`GET /v1/models`).
pub(super) async fn detect(c: &Controller) -> Result<ServerKind, ControlError> {
    let (status, body) = c.call(reqwest::Method::GET, "v1/models").await?;
    from_models(&body).ok_or_else(|| ControlError {
        endpoint: format!("GET {}", c.url("v1/models")),
        answer: format!("HTTP {status}: {}", super::short(&body)),
        advice: Some("cannot tell the server's engine from owned_by: pass --server-kind vllm, sglang or llama.cpp"),
    })
}

/// The server setting a prefix-cache reset needs.
pub fn reset_advice(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Vllm => {
            "vLLM serves /reset_prefix_cache only in dev mode: start it with VLLM_SERVER_DEV_MODE=1"
        }
        ServerKind::Sglang => "SGLang refuses /flush_cache while requests are running or waiting",
        ServerKind::LlamaCpp => {
            "llama-server erases a slot only with --slot-save-path set (and /slots enabled)"
        }
    }
}

/// The server setting the profiler endpoints need.
pub fn profile_advice(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Vllm => "vLLM serves /start_profile and /stop_profile only with a profiler configured: VLLM_TORCH_PROFILER_DIR=<dir> (or --profiler-config)",
        ServerKind::Sglang => "SGLang writes its profile to SGLANG_TORCH_PROFILER_DIR (default /tmp)",
        ServerKind::LlamaCpp => "llama-server has no profiler endpoint",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_name_engines() {
        let body =
            |o: &str| format!(r#"{{"object":"list","data":[{{"id":"m","owned_by":"{o}"}}]}}"#);
        assert_eq!(from_models(&body("vllm")), Some(ServerKind::Vllm));
        assert_eq!(from_models(&body("sglang")), Some(ServerKind::Sglang));
        assert_eq!(from_models(&body("llamacpp")), Some(ServerKind::LlamaCpp));
        assert_eq!(from_models(&body("llmperf-sim")), Some(ServerKind::Vllm));
        assert_eq!(from_models(&body("openai")), None);
        assert_eq!(from_models("not json"), None);
    }
}
