//! The endpoint side of the plan: model, headers (with `--api-key`), timeouts and the simulator settings
//! of `--api mock`.

use super::*;

/// `--model`, required and not blank.
pub(super) fn model(cli: &Cli) -> Result<String, UsageError> {
    match &cli.model {
        Some(m) if !m.trim().is_empty() => Ok(m.clone()),
        _ => {
            usage("--model is required (the model name sent in each request, e.g. --model qwen2.5)")
        }
    }
}

/// The model's last path component (evalscope's `model_id`).
pub(super) fn model_id(model: &str) -> String {
    model
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_string()
}

/// `--headers` then `--api-key` (which replaces any Authorization header), each checked as HTTP. A value is
/// never echoed: it may be a secret.
pub(super) fn headers(cli: &Cli) -> Result<Vec<(String, String)>, UsageError> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for h in &cli.headers {
        if h.malformed {
            // Only the start of the item is shown: the rest may be a secret.
            return usage(format!(
                "--headers: invalid key-value pair starting {:?}: expected KEY=VALUE, e.g. X-Team=infra or Authorization='Bearer …'",
                h.name
            ));
        }
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&h.name));
        headers.push((h.name.clone(), h.value.clone()));
    }
    if let Some(key) = &cli.api_key {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".into(), format!("Bearer {}", key.expose())));
    }
    for (k, v) in &headers {
        let is_key = cli.api_key.is_some() && k == "Authorization";
        if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
            return usage(format!(
                "--headers {k:?}: not a valid HTTP header name (letters, digits and -_.!#$%&'*+^`|~ only, e.g. X-Team=infra)"
            ));
        }
        if reqwest::header::HeaderValue::from_str(v).is_err() {
            let subject = if is_key {
                "--api-key: the key".to_string()
            } else {
                format!("--headers {k:?}: the value")
            };
            return usage(format!(
                "{subject} is not a valid HTTP header value (visible characters and spaces only, no line breaks)"
            ));
        }
    }
    Ok(headers)
}

/// The timeouts; 0 means none, as in evalscope (aiohttp ignores timeouts ≤ 0).
pub(super) fn timeouts(cli: &Cli) -> Timeouts {
    Timeouts {
        connect: cli
            .connect_timeout
            .filter(|&s| s > 0)
            .map(Duration::from_secs),
        read: cli.read_timeout.filter(|&s| s > 0).map(Duration::from_secs),
        total: match cli.total_timeout {
            0 => NO_TIMEOUT,
            s => Duration::from_secs(s),
        },
    }
}

/// The simulator's settings with `--api mock`; `--mock-fault` without it is an error.
pub(super) fn mock_settings(cli: &Cli, api: ApiKind) -> Result<Option<MockSettings>, UsageError> {
    if api != ApiKind::Mock {
        let c = &cli.capacity;
        if c.mock_max_batch > 0 || c.mock_prefill_tok_per_s > 0 || c.mock_decode_tok_per_s > 0 {
            return usage(
                "--mock-max-batch, --mock-prefill-tok-per-s and --mock-decode-tok-per-s configure the built-in simulator: add --api mock, or drop them",
            );
        }
        if cli.mock_output.mock_invalid_output_rate > 0.0 {
            return usage(
                "--mock-invalid-output-rate configures the built-in simulator: add --api mock, or drop it",
            );
        }
        if !cli.mock_fault.is_empty() {
            return usage(
                "--mock-fault configures the built-in simulator: add --api mock, or drop --mock-fault",
            );
        }
        if cli.mock_conn.mock_max_connections > 0 {
            return usage(
                "--mock-max-connections configures the built-in simulator: add --api mock (or use `llmperf serve-mock --mock-max-connections`), or drop it",
            );
        }
        if cli.mock_jitter.mock_jitter_cv != 0.0 {
            return usage(
                "--mock-jitter-cv configures the built-in simulator: add --api mock (or use `llmperf serve-mock --mock-jitter-cv`), or drop it",
            );
        }
        return Ok(None);
    }
    for (flag, v) in [
        ("--mock-ttft-ms", cli.mock_ttft_ms),
        ("--mock-itl-ms", cli.mock_itl_ms),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return usage(format!("{flag} {v}: must be a number of milliseconds ≥ 0"));
        }
    }
    if cli.mock_threads == 0 {
        return usage("--mock-threads must be at least 1");
    }
    let jitter = crate::sim::Jitter::new(cli.mock_jitter.mock_jitter_cv, cli.seed.unwrap_or(0))
        .map_err(|e| UsageError(format!("--mock-jitter-cv {e}")))?;
    Ok(Some(MockSettings {
        ttft: Duration::from_secs_f64(cli.mock_ttft_ms / 1000.0),
        itl: Duration::from_secs_f64(cli.mock_itl_ms / 1000.0),
        output_tokens: cli.mock_output_tokens,
        threads: cli.mock_threads,
        faults: cli.mock_fault.clone(),
        max_batch: cli.capacity.mock_max_batch,
        prefill_tok_per_s: cli.capacity.mock_prefill_tok_per_s,
        decode_tok_per_s: cli.capacity.mock_decode_tok_per_s,
        jitter,
        invalid_output_rate: cli.mock_output.mock_invalid_output_rate,
        max_connections: cli.mock_conn.mock_max_connections,
    }))
}
