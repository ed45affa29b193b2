//! The event parser: arbitrary bytes never panic; on every JSON payload the typed fast path and the generic
//! walk agree; a stream of arbitrary events leaves a consistent record.

use std::sync::Arc;
use std::time::{Duration, Instant};

use llmperf::api::openai_event::{apply_stream_event, inspect, inspect_value};
use llmperf::record::{FailureKind, RequestRecord};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::harness::fuzz;
use crate::json::{leaf, value};

/// `Some(v)` or absent.
fn maybe(v: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop::option::of(v)
}

/// A leaf that is usually a string (the type the parser expects) but can be anything.
fn text() -> impl Strategy<Value = Value> {
    prop_oneof![3 => any::<String>().prop_map(Value::String), 1 => leaf()]
}

fn insert(obj: &mut serde_json::Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        obj.insert(key.to_string(), v);
    }
}

/// OpenAI-shaped chunks with every field optional and any leaf type.
fn chunk() -> impl Strategy<Value = Value> {
    let delta = (
        maybe(text()),
        maybe(text()),
        maybe(text()),
        maybe(text()),
        maybe(text()),
    )
        .prop_map(|(content, reasoning_content, reasoning, name, arguments)| {
            let mut d = serde_json::Map::new();
            insert(&mut d, "content", content);
            insert(&mut d, "reasoning_content", reasoning_content);
            insert(&mut d, "reasoning", reasoning);
            if name.is_some() || arguments.is_some() {
                let mut f = serde_json::Map::new();
                insert(&mut f, "name", name);
                insert(&mut f, "arguments", arguments);
                d.insert("tool_calls".into(), json!([{ "function": f }]));
            }
            Value::Object(d)
        });
    let usage = (maybe(leaf()), maybe(leaf()), maybe(leaf())).prop_map(|(p, c, cached)| {
        let mut u = serde_json::Map::new();
        insert(&mut u, "prompt_tokens", p);
        insert(&mut u, "completion_tokens", c);
        if let Some(cached) = cached {
            u.insert(
                "prompt_tokens_details".into(),
                json!({ "cached_tokens": cached }),
            );
        }
        Value::Object(u)
    });
    let choice =
        (maybe(delta), maybe(text()), maybe(value())).prop_map(|(delta, text, message)| {
            let mut c = serde_json::Map::new();
            insert(&mut c, "delta", delta);
            insert(&mut c, "text", text);
            insert(&mut c, "message", message);
            Value::Object(c)
        });
    (
        maybe(
            prop::collection::vec(prop_oneof![4 => choice, 1 => value()], 0..3)
                .prop_map(Value::Array),
        ),
        maybe(prop_oneof![3 => usage, 1 => value()]),
        maybe(value()),
        maybe(text()),
    )
        .prop_map(|(choices, usage, error, object)| {
            let mut e = serde_json::Map::new();
            insert(&mut e, "choices", choices);
            insert(&mut e, "usage", usage);
            insert(&mut e, "error", error);
            insert(&mut e, "object", object);
            Value::Object(e)
        })
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => chunk().prop_map(|v| v.to_string().into_bytes()),
        1 => value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => chunk().prop_flat_map(|v| {
            // A JSON event cut short or with a byte changed.
            let s = v.to_string().into_bytes();
            let len = s.len();
            (Just(s), 0..=len, any::<u8>())
        })
        .prop_map(|(mut s, at, b)| {
            if at < s.len() && b % 2 == 0 {
                s[at] = b;
            } else {
                s.truncate(at);
            }
            s
        }),
    ]
}

#[test]
fn fast_and_generic_event_paths_agree() {
    fuzz(
        "event_parser_differential",
        || prop_oneof![3 => chunk(), 1 => value()],
        |v| {
            let bytes = serde_json::to_vec(&v).unwrap();
            let fast = inspect(&bytes);
            prop_assert!(fast.is_json && !fast.malformed);
            prop_assert_eq!(fast, inspect_value(&v));
            Ok(())
        },
    );
}

#[test]
fn arbitrary_event_streams_leave_a_consistent_record() {
    fuzz(
        "event_parser_stream",
        || prop::collection::vec(payload(), 0..12),
        |events| {
            let t0 = Instant::now();
            let mut r = RequestRecord::new(0, false, Arc::from("{}"), t0);
            let mut choices_events = 0;
            for (i, p) in events.iter().enumerate() {
                let info = inspect(p);
                if info.is_json && info.has_choices {
                    choices_events += 1;
                }
                prop_assert!(!(info.is_json && info.malformed));
                apply_stream_event(&mut r, p, t0 + Duration::from_millis(i as u64));
            }
            prop_assert!(r.chunk_times.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(r.n_decode_chunks as usize >= r.chunk_times.len());
            prop_assert_eq!(r.responses().count(), choices_events);
            match r.failure {
                None => prop_assert!(r.error.is_none()),
                Some(FailureKind::InBandError | FailureKind::Malformed) => {
                    let e = r.error.as_deref().unwrap_or("");
                    prop_assert!(!e.is_empty() && !e.contains('\n'));
                }
                Some(other) => prop_assert!(false, "unexpected kind {:?}", other),
            }
            Ok(())
        },
    );
}
