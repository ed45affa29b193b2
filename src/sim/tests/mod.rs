//! End-to-end tests of the simulator over real loopback HTTP (reqwest, and raw TCP for disconnects).

mod faults;
mod structured;

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

fn cfg(ttft_ms: u64, itl_ms: u64) -> SimConfig {
    SimConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        ..SimConfig::default()
    }
}

/// POSTs `body` and returns (status, content-type, body text).
async fn post(sim: &SimServer, path: &str, body: &str) -> (u16, String, String) {
    let resp = reqwest::Client::new()
        .post(format!("{}{path}", sim.base_url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
    (status, ctype, resp.text().await.unwrap())
}

async fn get(sim: &SimServer, path: &str) -> (u16, Value) {
    let resp = reqwest::get(format!("{}{path}", sim.base_url()))
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_str(&resp.text().await.unwrap()).unwrap(),
    )
}

/// Splits an SSE body into its `data:` payloads, checking the framing.
fn frames(body: &str) -> Vec<String> {
    assert!(body.ends_with("\n\n"), "{body:?}");
    body.trim_end_matches("\n\n")
        .split("\n\n")
        .map(|f| f.strip_prefix("data: ").expect(f).to_string())
        .collect()
}

fn parse(frames: &[String]) -> (Vec<Value>, bool) {
    let done = frames.last().map(String::as_str) == Some("[DONE]");
    let json = frames[..frames.len() - usize::from(done)]
        .iter()
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    (json, done)
}

fn chat_body(extra: Value) -> String {
    let mut body =
        json!({"model": "m1", "messages": [{"role": "user", "content": "one two three"}]});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body.to_string()
}

#[tokio::test]
async fn chat_stream_with_usage_and_truthful_timing() {
    let (ttft, itl) = (60u64, 20u64);
    let sim = SimServer::start(cfg(ttft, itl)).unwrap();
    let body = chat_body(json!({"max_tokens": 5, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}}));
    let (status, ctype, text) = post(&sim, "/v1/chat/completions", &body).await;
    assert_eq!((status, ctype.as_str()), (200, "text/event-stream"));
    let (chunks, done) = parse(&frames(&text));
    assert!(done);
    assert_eq!(chunks.len(), 7, "{text}");
    assert_eq!(
        chunks[0],
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": chunks[0]["created"],
            "model": "m1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
            "logprobs": null, "finish_reason": null}]})
    );
    for (i, c) in chunks[1..6].iter().enumerate() {
        let choice = &c["choices"][0];
        assert_eq!(choice["delta"], json!({"content": "hello "}));
        let finish = if i == 4 { json!("length") } else { Value::Null };
        assert_eq!(choice["finish_reason"], finish);
        assert_eq!(c["id"], "chatcmpl-1");
    }
    assert_eq!(chunks[6]["choices"], json!([]));
    assert_eq!(
        chunks[6]["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8,
            "prompt_tokens_details": {"cached_tokens": 0}})
    );

    let truth = sim.truth();
    assert_eq!(truth.len(), 1);
    let t = &truth[0];
    assert_eq!(
        (t.prompt_tokens, t.completion_tokens, t.stream, t.request_id),
        (3, 5, true, 1)
    );
    assert_eq!(t.path, "/v1/chat/completions");
    let (first, last) = (t.first_token_s.unwrap(), t.last_token_s.unwrap());
    // Sends follow an absolute timeline from `received`, so no token is ever early against it; a late
    // first token (a timer tick, or a loaded machine) shortens last - first by as much as it was late.
    let (ttft_s, itl_s) = (ttft as f64 / 1e3, itl as f64 / 1e3);
    assert!(first - t.received_s >= ttft_s, "{t:?}");
    assert!(last - t.received_s >= ttft_s + 4.0 * itl_s, "{t:?}");
    let decode = last - first;
    let first_late = first - t.received_s - ttft_s;
    assert!(decode + first_late >= 4.0 * itl_s - 1e-9, "{t:?}");
    // Gross errors only: a loaded machine can hold the simulator's thread back for a while.
    assert!(decode < 4.0 * itl_s + 1.0, "{t:?}");
    sim.shutdown();
}

#[tokio::test]
async fn stream_without_usage_and_length_clamping() {
    let sim = SimServer::start(SimConfig {
        output_tokens: 7,
        ..cfg(0, 0)
    })
    .unwrap();
    let cases = [
        (json!({"max_tokens": 100}), 7, "stop"),
        (json!({"max_tokens": 4}), 4, "length"),
        (json!({"max_tokens": 100, "min_tokens": 9}), 9, "stop"),
        (json!({"max_tokens": 3, "ignore_eos": true}), 3, "length"),
        (json!({}), 7, "stop"),
    ];
    for (extra, n, finish) in cases {
        let mut extra = extra;
        extra["stream"] = json!(true);
        let (_, _, text) = post(&sim, "/v1/chat/completions", &chat_body(extra.clone())).await;
        let (chunks, done) = parse(&frames(&text));
        assert!(done);
        assert_eq!(chunks.len(), 1 + n, "{extra} {text}");
        assert!(chunks.iter().all(|c| c.get("usage").is_none()), "{text}");
        assert_eq!(chunks[n]["choices"][0]["finish_reason"], finish, "{extra}");
        let content: String = chunks[1..]
            .iter()
            .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
            .collect();
        assert_eq!(content.split_whitespace().count(), n);
    }
    let truth = sim.truth();
    let counts: Vec<u64> = truth.iter().map(|t| t.completion_tokens).collect();
    assert_eq!(counts, [7, 4, 9, 3, 7]);
}

#[tokio::test]
async fn tokens_per_chunk_groups_words() {
    let sim = SimServer::start(SimConfig {
        tokens_per_chunk: 3,
        ..cfg(0, 1)
    })
    .unwrap();
    let body = json!({"prompt": "a b", "max_tokens": 7, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}});
    let (_, _, text) = post(&sim, "/v1/completions", &body.to_string()).await;
    let (chunks, _) = parse(&frames(&text));
    let texts: Vec<&str> = chunks[..3]
        .iter()
        .map(|c| c["choices"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["hello hello hello ", "hello hello hello ", "hello "]
    );
    assert_eq!(chunks[3]["usage"]["completion_tokens"], 7);
}

#[tokio::test]
async fn completions_stream_with_token_ids() {
    let sim = SimServer::start(cfg(5, 1)).unwrap();
    let body = r#"{"prompt": [20, 94, 33, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83], "model": "mock-model", "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0}"#;
    let (status, _, text) = post(&sim, "/v1/completions", body).await;
    assert_eq!(status, 200);
    let (chunks, done) = parse(&frames(&text));
    assert!(done);
    assert_eq!(chunks.len(), 3);
    assert_eq!(
        chunks[0],
        json!({"id": "cmpl-1", "object": "text_completion", "created": chunks[0]["created"],
            "model": "mock-model", "choices": [{"index": 0, "text": "hello ", "logprobs": null,
            "finish_reason": null}]})
    );
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "length");
    assert_eq!(chunks[2]["choices"], json!([]));
    assert_eq!(chunks[2]["usage"]["prompt_tokens"], 14);
    assert_eq!(chunks[2]["usage"]["total_tokens"], 16);
}

#[tokio::test]
async fn non_stream_bodies() {
    let sim = SimServer::start(cfg(20, 5)).unwrap();
    let body = chat_body(json!({"max_tokens": 3, "stream": false}));
    let (status, ctype, text) = post(&sim, "/v1/chat/completions", &body).await;
    assert_eq!((status, ctype.as_str()), (200, "application/json"));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v,
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": v["created"], "model": "m1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello hello hello "},
            "logprobs": null, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6,
            "prompt_tokens_details": {"cached_tokens": 0}}})
    );
    let (_, _, text) = post(
        &sim,
        "/v1/completions",
        r#"{"prompt": "x y", "max_tokens": 2}"#,
    )
    .await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["model"], "mock-model");
    assert_eq!(v["choices"][0]["text"], "hello hello ");
    assert_eq!(v["usage"]["prompt_tokens"], 2);
    let truth = sim.truth();
    assert_eq!(truth.len(), 2);
    let t = &truth[0];
    assert!(!t.stream);
    assert!(
        t.first_token_s.unwrap() - t.received_s >= 0.020 + 2.0 * 0.005 - 1e-4,
        "{t:?}"
    );
}

#[tokio::test]
async fn embeddings_models_health_and_errors() {
    let sim = SimServer::start(cfg(1, 1)).unwrap();
    let (status, _, text) = post(
        &sim,
        "/v1/embeddings",
        r#"{"input": ["a b c", "d"], "model": "emb"}"#,
    )
    .await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "emb");
    assert_eq!(v["usage"], json!({"prompt_tokens": 4, "total_tokens": 4}));
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[1]["index"], 1);
    assert_eq!(data[1]["object"], "embedding");
    assert_eq!(data[1]["embedding"].as_array().unwrap().len(), 8);
    let (_, _, text) = post(&sim, "/v1/embeddings", r#"{"input": "one two"}"#).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            v["data"].as_array().unwrap().len(),
            &v["usage"]["prompt_tokens"]
        ),
        (1, &json!(2))
    );

    let (status, v) = get(&sim, "/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(v["data"][0]["id"], "emb");
    assert_eq!(get(&sim, "/health").await, (200, json!({"status": "ok"})));
    let (status, v) = get(&sim, "/nope").await;
    assert_eq!((status, &v["error"]["type"]), (404, &json!("not_found")));
    let (status, _, text) = post(&sim, "/v1/chat/completions", "{not json").await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (status, &v["error"]["type"]),
        (400, &json!("invalid_request_error"))
    );
    let (status, _, _) = post(&sim, "/v1/completions", r#"{"max_tokens": 2}"#).await;
    assert_eq!(status, 400);
    let (status, _) = get(&sim, "/v1/chat/completions").await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn endpoints_behind_a_gateway_prefix_are_served() {
    let sim = SimServer::start(cfg(0, 0)).unwrap();
    let (status, _, text) = post(
        &sim,
        "/compatible-mode/v1/embeddings",
        r#"{"input": ["a b"], "model": "emb"}"#,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    let (status, _, text) = post(
        &sim,
        "/compatible-api/v1/reranks",
        r#"{"query": "q", "documents": ["a", "b c"], "model": "rr"}"#,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    let body = chat_body(json!({"stream": false, "max_tokens": 3}));
    let (status, _, text) = post(&sim, "/compatible-mode/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{text}");
    // The captured request keeps the path as sent; an unknown path under the prefix is still a 404.
    assert_eq!(sim.requests()[0].0, "/compatible-mode/v1/embeddings");
    let (status, v) = get(&sim, "/compatible-mode/v1/nope").await;
    assert_eq!((status, &v["error"]["type"]), (404, &json!("not_found")));
}

#[tokio::test]
async fn models_defaults_to_mock_model() {
    let sim = SimServer::start(cfg(0, 0)).unwrap();
    let (_, v) = get(&sim, "/v1/models").await;
    assert_eq!(v["data"][0]["id"], "mock-model");
}

#[tokio::test]
async fn requests_are_captured_byte_for_byte() {
    let sim = SimServer::start(cfg(0, 0)).unwrap();
    let body = "{\"messages\": [{\"role\": \"user\", \"content\": \"h\u{e9}llo there\"}], \"model\": \"mock-model\", \"max_tokens\": 2}";
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", sim.base_url()))
        .header("Content-Type", "application/json")
        .header("User-Agent", "modelscope_bench")
        .header("Authorization", "Bearer sk-test")
        .body(body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 1);
    let (path, raw, headers) = &reqs[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(raw, body);
    let find = |k: &str| {
        headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(find("content-type"), Some("application/json"));
    assert_eq!(find("user-agent"), Some("modelscope_bench"));
    assert_eq!(find("authorization"), Some("Bearer sk-test"));
    assert_eq!(sim.truth()[0].prompt_tokens, 2);
}

#[tokio::test]
async fn client_disconnect_mid_stream_is_recorded_and_harmless() {
    let sim = SimServer::start(cfg(0, 20)).unwrap();
    let body = chat_body(json!({"max_tokens": 200, "ignore_eos": true, "stream": true}));
    let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.windows(6).filter(|w| w == b"hello ").count() < 3 {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    drop(tcp);
    let mut truth = Vec::new();
    for _ in 0..200 {
        truth = sim.truth();
        if !truth.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(truth.len(), 1, "no record after the disconnect");
    let sent = truth[0].completion_tokens;
    assert!((3..200).contains(&sent), "{:?}", truth[0]);
    // Still serving.
    let (status, _, text) = post(
        &sim,
        "/v1/chat/completions",
        &chat_body(json!({"max_tokens": 2})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(text.contains("hello hello "));
}

#[tokio::test]
async fn keep_alive_multi_thread_and_many_requests() {
    let sim = SimServer::start(SimConfig {
        threads: 2,
        ..cfg(0, 0)
    })
    .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let body = chat_body(json!({"max_tokens": 16, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}}));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                let text = client.post(&url).body(body.clone()).send().await.unwrap();
                let text = text.text().await.unwrap();
                assert!(text.ends_with("data: [DONE]\n\n"));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let truth = sim.truth();
    assert_eq!(truth.len(), 200);
    assert!(truth.iter().all(|t| t.completion_tokens == 16));
    let mut ids: Vec<u64> = truth.iter().map(|t| t.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 200);
}

#[test]
fn start_and_drop_outside_any_runtime() {
    let sim = SimServer::start(SimConfig::default()).unwrap();
    assert!(sim.base_url().starts_with("http://127.0.0.1:"));
    drop(sim);
}
