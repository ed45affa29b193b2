//! The one-pass event reader against `serde_json` (the oracle) on random and hand-made events.

use rand::{Rng, SeedableRng};

use super::super::openai_event::inspect_serde;
use super::*;

/// A random value of a random type, sometimes one of the shapes the fast path reads.
fn value(rng: &mut impl Rng, depth: u32) -> String {
    let strings = [
        r#""""#,
        r#""hello ""#,
        r#""a\nb""#,
        r#""\u00e9""#,
        r#""\ud83d\ude00""#,
        r#""\ud800""#,
        r#""x\"y""#,
        r#""error""#,
        r#""chat.completion.chunk""#,
        "\"raw \u{e9}\"",
    ];
    match rng.random_range(0..12) {
        0 => "null".into(),
        1 => ["true", "false"][rng.random_range(0..2)].into(),
        2 => [
            "0",
            "7",
            "-3",
            "1.5",
            "1e3",
            "18446744073709551615",
            "18446744073709551616",
            "-0",
            "007",
        ][rng.random_range(0..9)]
        .into(),
        3..=5 => strings[rng.random_range(0..strings.len())].into(),
        6 | 7 if depth < 4 => {
            let n = rng.random_range(0..4);
            let items: Vec<String> = (0..n).map(|_| value(rng, depth + 1)).collect();
            format!("[{}]", items.join(","))
        }
        _ if depth < 4 => object(rng, depth + 1),
        _ => "1".into(),
    }
}

fn object(rng: &mut impl Rng, depth: u32) -> String {
    let keys = [
        "choices",
        "usage",
        "error",
        "object",
        "text",
        "delta",
        "message",
        "content",
        "reasoning_content",
        "reasoning",
        "tool_calls",
        "reasoning_details",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "id",
        "index",
        "finish_reason",
        "obj\\u0065ct",
    ];
    let n = rng.random_range(0..5);
    let fields: Vec<String> = (0..n)
        .map(|_| {
            let k = keys[rng.random_range(0..keys.len())];
            format!("\"{k}\": {}", value(rng, depth))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// A delta carrying `tool_calls` (as vLLM and llama.cpp stream them), with random variations.
fn tool_call_delta(rng: &mut impl Rng, arguments: &str) -> String {
    let name = ["\"get_weather\"", "\"\"", "null", "3"][rng.random_range(0..4)];
    let function = match rng.random_range(0..5) {
        0 => format!("{{\"arguments\":{arguments}}}"),
        1 => "null".to_string(),
        2 => format!("{{\"name\":{name},\"arguments\":{arguments},\"name\":{name}}}"),
        _ => format!("{{\"name\":{name},\"arguments\":{arguments}}}"),
    };
    let call = match rng.random_range(0..4) {
        0 => format!("{{\"index\":0,\"function\":{function}}}"),
        1 => format!(
            "{{\"index\":1,\"id\":\"call_1\",\"type\":\"function\",\"function\":{function}}},{{\"index\":2}}"
        ),
        2 => "5".to_string(),
        _ => format!("{{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{function}}}"),
    };
    let calls = match rng.random_range(0..4) {
        0 => "[]".to_string(),
        1 => "null".to_string(),
        2 => "{}".to_string(),
        _ => format!("[{call}]"),
    };
    format!("{{\"role\":\"assistant\",\"content\":null,\"tool_calls\":{calls}}}")
}

/// A realistic event with random variations.
fn event(rng: &mut impl Rng) -> String {
    let content = [
        r#""hello ""#,
        r#""""#,
        "null",
        r#""line\n""#,
        "5",
        r#""\ud800""#,
    ][rng.random_range(0..6)];
    let delta_key = ["delta", "message", "text"][rng.random_range(0..3)];
    let delta = if delta_key == "text" {
        content.to_string()
    } else if rng.random_range(0..3) == 0 {
        tool_call_delta(rng, content)
    } else {
        let k = ["content", "reasoning_content", "reasoning"][rng.random_range(0..3)];
        format!(r#"{{"role":"assistant","{k}":{content}}}"#)
    };
    let choices = match rng.random_range(0..5) {
        0 => "[]".to_string(),
        1 => "null".to_string(),
        2 => format!(r#"[{{"index":0,"{delta_key}":{delta}}},{{"index":1}}]"#),
        _ => {
            format!(r#"[{{"index":0,"{delta_key}":{delta},"logprobs":null,"finish_reason":null}}]"#)
        }
    };
    let usage = match rng.random_range(0..6) {
        0 => String::new(),
        1 => r#","usage":null"#.to_string(),
        2 => r#","usage":{"prompt_tokens":7,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3}}"#.to_string(),
        3 => r#","usage":{"prompt_tokens":7.0,"completion_tokens":-1}"#.to_string(),
        4 => r#","usage":{"prompt_tokens":null,"prompt_tokens_details":null}"#.to_string(),
        _ => format!(r#","usage":{}"#, value(rng, 2)),
    };
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":{choices}{usage}}}"#
    )
}

fn mutate(rng: &mut impl Rng, s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    let junk = b"{}[],:\"\\ nu0a\x00\xff";
    for _ in 0..rng.random_range(1..3) {
        if b.is_empty() {
            break;
        }
        let i = rng.random_range(0..b.len());
        match rng.random_range(0..3) {
            0 => {
                b.remove(i);
            }
            1 => b.insert(i, junk[rng.random_range(0..junk.len())]),
            _ => b[i] = junk[rng.random_range(0..junk.len())],
        }
    }
    b
}

#[test]
fn fast_path_agrees_with_serde_json_on_random_events() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let (mut fast, mut total) = (0, 0);
    for round in 0..60_000 {
        let payload: Vec<u8> = match round % 3 {
            0 => event(&mut rng).into_bytes(),
            1 => {
                let e = event(&mut rng);
                mutate(&mut rng, &e)
            }
            _ => object(&mut rng, 0).into_bytes(),
        };
        total += 1;
        if let Some(info) = inspect(&payload) {
            fast += 1;
            assert_eq!(
                info,
                inspect_serde(&payload),
                "{:?}",
                String::from_utf8_lossy(&payload)
            );
        }
    }
    assert!(fast * 3 > total, "the fast path decided {fast} of {total}");
}

#[test]
fn typical_chunks_take_the_fast_path() {
    let chunks: [&[u8]; 6] = [
        br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#,
        br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \""}}]},"logprobs":null,"finish_reason":null}]}"#,
        br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1764000000,"model":"m","choices":[{"index":0,"delta":{"content":"hello\nworld"},"logprobs":null,"finish_reason":null}]}"#,
        br#"{"id":"cmpl-7","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","logprobs":null,"finish_reason":"length"}]}"#,
        br#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":16,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    ];
    for c in chunks {
        let info = inspect(c).expect("fast path");
        assert_eq!(info, inspect_serde(c));
    }
}
