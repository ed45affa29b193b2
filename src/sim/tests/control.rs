//! The control endpoints: resets empty the prefix cache, SGLang's flush is refused while a request is in
//! flight, the profiler's calls are recorded in order with their in-flight counts.

use std::time::Duration;

use serde_json::Value;

use super::{cfg, post};
use crate::sim::{SimConfig, SimServer};

fn cached(body: &str) -> u64 {
    let v: Value = serde_json::from_str(body).unwrap();
    v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn a_reset_empties_the_prefix_cache_and_is_recorded() {
    let sim = SimServer::start(SimConfig {
        prefix_cache: true,
        ..cfg(0, 0)
    })
    .unwrap();
    let body = r#"{"prompt": "a b c d e", "max_tokens": 1}"#;
    let (_, _, first) = post(&sim, "/v1/completions", body).await;
    let (_, _, second) = post(&sim, "/v1/completions", body).await;
    assert_eq!((cached(&first), cached(&second)), (0, 4));
    for path in ["/reset_prefix_cache", "/flush_cache"] {
        let (status, _, _) = post(&sim, path, "").await;
        assert_eq!(status, 200);
        let (_, _, again) = post(&sim, "/v1/completions", body).await;
        assert_eq!(cached(&again), 0, "{path} emptied the cache");
    }
    let calls = sim.control_calls();
    assert_eq!(calls.len(), 2);
    assert!(calls[0].at_s <= calls[1].at_s);
    let metrics = reqwest::get(format!("{}/metrics", sim.base_url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("vllm:prefix_cache_hits_total{model_name=\"mock-model\"} 4"),
        "{metrics}"
    );
}

#[tokio::test]
async fn flush_is_refused_in_flight_and_the_profiler_keeps_its_state() {
    let sim = SimServer::start(cfg(400, 0)).unwrap();
    let url = sim.base_url();
    let slow = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/v1/completions"))
            .body(r#"{"prompt": "x", "max_tokens": 1}"#)
            .send()
            .await
            .unwrap()
            .status()
    });
    while sim.requests_received() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, _, body) = post(&sim, "/flush_cache", "").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(post(&sim, "/start_profile", "").await.0, 200);
    assert_eq!(
        post(&sim, "/start_profile", "").await.0,
        400,
        "already running"
    );
    assert_eq!(slow.await.unwrap(), 200);
    assert_eq!(post(&sim, "/stop_profile", "").await.0, 200);
    assert_eq!(post(&sim, "/stop_profile", "").await.0, 400, "not running");
    let calls = sim.control_calls();
    let seen: Vec<(&str, i64, u16)> = calls
        .iter()
        .map(|c| (c.path.as_str(), c.in_flight, c.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("/flush_cache", 1, 400),
            ("/start_profile", 1, 200),
            ("/start_profile", 1, 400),
            ("/stop_profile", 0, 200),
            ("/stop_profile", 0, 400),
        ]
    );
    // GET on a control path: 405.
    let resp = reqwest::get(format!("{}/flush_cache", sim.base_url()))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
}
