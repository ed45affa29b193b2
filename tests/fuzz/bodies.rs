//! The request-body composer on arbitrary items, flags and `--extra-args`: the body is valid JSON, written
//! byte for byte as Python's `json.dumps(ensure_ascii=False)` writes the same dict, with evalscope's
//! precedence (flags overwrite plain bodies, dataset bodies win over flags, `--extra-args` last).

use std::io::Write as _;

use llmperf::api::openai::BodyComposer;
use llmperf::dataset::Item;
use llmperf::plan::GenParams;
use proptest::prelude::*;
use rand::SeedableRng;
use serde_json::{json, Map, Value};

use crate::harness::fuzz;
use crate::json::{float, object, py_dumps, value};

fn item() -> impl Strategy<Value = Item> {
    let message = (
        prop::sample::select(vec!["user", "system", "assistant"]),
        prop_oneof![3 => any::<String>().prop_map(Value::String), 1 => value()],
    )
        .prop_map(|(role, content)| json!({"role": role, "content": content}));
    prop_oneof![
        any::<String>().prop_map(Item::Text),
        prop::collection::vec(message, 1..4).prop_map(Item::Chat),
        object().prop_map(Item::Body),
    ]
}

fn params() -> impl Strategy<Value = GenParams> {
    (
        (0u64..5000, 0u64..5000),
        prop::option::of(any::<u64>()),
        (
            prop::option::of(float()),
            prop::option::of(float()),
            any::<bool>(),
        ),
        (
            prop::option::of(any::<u64>()),
            prop::option::of(any::<u64>()),
        ),
        prop::option::of(prop::collection::vec(any::<String>(), 0..3)),
        any::<bool>(),
        prop::option::of(prop::collection::vec(any::<i64>(), 0..3)),
        (
            float(),
            prop::option::of(float()),
            prop::option::of(any::<i64>()),
        ),
        object(),
    )
        .prop_map(
            |(
                mt,
                min_tokens,
                (fp, rp, logprobs),
                (n, seed),
                stop,
                stream,
                ids,
                (t, top_p, top_k),
                extra,
            )| {
                GenParams {
                    max_tokens: (mt.0.min(mt.1), mt.0.max(mt.1)),
                    min_tokens,
                    frequency_penalty: fp,
                    repetition_penalty: rp,
                    logprobs,
                    n_choices: n,
                    seed,
                    stop,
                    stream,
                    stop_token_ids: ids,
                    temperature: t,
                    top_p,
                    top_k,
                    extra_args: extra,
                }
            },
        )
}

/// An optional `--query-template`: a JSON object, sometimes with `%m`/`%p` inside strings.
fn template() -> impl Strategy<Value = Option<String>> {
    prop::option::of((object(), any::<bool>()).prop_map(|(mut o, placeholders)| {
        if placeholders {
            o.insert("model".into(), json!("%m"));
            o.insert(
                "messages".into(),
                json!([{"role": "user", "content": "say %p now"}]),
            );
        }
        serde_json::to_string(&Value::Object(o)).unwrap()
    }))
}

#[test]
fn composed_bodies_are_python_json_with_evalscope_precedence() {
    let dump = std::env::var("LLMPERF_FUZZ_DUMP_DIR").ok().map(|d| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(std::path::Path::new(&d).join("bodies.jsonl"))
            .unwrap()
    });
    // At most this many bodies are written for the Python cross-check of `scripts/fuzz.sh`.
    let dump_max: usize = std::env::var("LLMPERF_FUZZ_DUMP_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let dump = std::sync::Mutex::new((dump, 0usize));
    let inputs = || (item(), params(), template(), any::<String>(), any::<u64>());
    fuzz(
        "body_composer",
        inputs,
        |(item, params, template, model, seed)| {
            let composer = BodyComposer::new(&model, params.clone(), template.clone());
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let value = composer.compose_value(&item, &mut rng);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let text = composer.compose(&item, &mut rng);
            // Valid JSON, the same object, in the same key order.
            let parsed: Map<String, Value> = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {text}")))?;
            prop_assert_eq!(&parsed, &value);
            prop_assert!(parsed.keys().eq(value.keys()));
            // Byte for byte what Python writes.
            prop_assert_eq!(&*text, py_dumps(&Value::Object(value.clone())));
            if let (Some(f), written) = &mut *dump.lock().unwrap() {
                if *written < dump_max {
                    writeln!(f, "{text}").unwrap();
                    *written += 1;
                }
            }
            // Precedence.
            match &item {
                Item::Body(b) => {
                    for (k, v) in b {
                        if k != "stream_options" || parsed.get("stream") == Some(&json!(true)) {
                            prop_assert_eq!(parsed.get(k), Some(v), "dataset body key {}", k);
                        }
                    }
                }
                _ => {
                    for (k, v) in &params.extra_args {
                        prop_assert_eq!(parsed.get(k), Some(v), "--extra-args key {}", k);
                    }
                    // An empty model is a replayed trace without --model (the plan rejects an empty
                    // --model): the composer adds no "model" key, so a body has one only where a
                    // --query-template writes its own.
                    if !params.extra_args.contains_key("model") {
                        if !model.is_empty() {
                            prop_assert_eq!(parsed.get("model"), Some(&json!(model)));
                        } else if template.is_none() {
                            prop_assert_eq!(parsed.get("model"), None);
                        }
                    }
                    let mt = parsed.get("max_tokens").and_then(Value::as_u64);
                    if !params.extra_args.contains_key("max_tokens") {
                        let mt = mt.unwrap();
                        prop_assert!(params.max_tokens.0 <= mt && mt <= params.max_tokens.1);
                    }
                }
            }
            // `stream_options` follows `stream` as it was before `--extra-args` (evalscope applies them last).
            let streaming = parsed.get("stream") == Some(&json!(true));
            let extra = &params.extra_args;
            if !extra.contains_key("stream_options") && !extra.contains_key("stream") {
                prop_assert_eq!(parsed.contains_key("stream_options"), streaming);
            }
            Ok(())
        },
    );
}
