//! Generation endpoints of the real server: forced lengths, sweeps, open loop, non-stream, stop sequences,
//! prefix caching.

use crate::server::{RealServer, MODEL};

const PROMPT: &str = "Write a short paragraph about the history of the lighthouse and why ships needed them at night";

#[test]
fn seed_shape_forced_length_with_warmup() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server.run_at("/chat/completions")
        .flag("--prompt", PROMPT)
        .flags(r#"--min-tokens 16 --max-tokens 16 --temperature 0 --seed 42 --parallel 1 --number 4 --warmup-num 1 --stream --extra-args '{"ignore_eos": true}'"#)
        .ok_dir("parallel_1_number_4");
    let rows = run.rows();
    assert_eq!(rows.len(), 4, "warmup not stored");
    let prompt_tokens = rows[0].prompt_tokens.unwrap();
    assert!(
        prompt_tokens > 15,
        "a templated 18-word prompt: {prompt_tokens}"
    );
    for r in &rows {
        assert!(r.success, "{:?}", r.error);
        assert_eq!(
            r.completion_tokens,
            Some(16),
            "ignore_eos forces the length"
        );
        assert_eq!(
            r.prompt_tokens,
            Some(prompt_tokens),
            "the same prompt every time"
        );
        assert!(r.ttft.unwrap() > 0.0 && r.ttft.unwrap() < r.latency.unwrap());
        assert_eq!(r.chunk_times.len(), 16, "one chunk per token on llama.cpp");
    }
    let s = run.summary();
    assert_eq!(s["Avg Output Tokens"], 16.0);
    assert_eq!(s["Failed Requests"], 0);
    // The server's prompt cache serves the repeated prompt: evalscope's KV-cache key appears.
    assert!(s["KV Cache Hit Rate (%)"].as_f64().unwrap() > 50.0, "{s}");
}

#[test]
fn sweep_three_runs_and_report() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server.run()
        .flags(r#"--prompt 'Say hello' --parallel 1 2 4 --number 4 8 16 --max-tokens 8 --extra-args '{"ignore_eos": true}' --name sweep"#);
    run.ok();
    let root = run.root();
    for (dir, n) in [
        ("parallel_1_number_4", 4),
        ("parallel_2_number_8", 8),
        ("parallel_4_number_16", 16),
    ] {
        let s = run.run_dir(dir).summary();
        assert_eq!(s["Success Requests"], n, "{dir}: {s}");
        assert_eq!(s["Avg Output Tokens"], 8.0);
    }
    let report = std::fs::read_to_string(root.join("performance_summary.txt")).unwrap();
    for conc in ["│    1 │", "│    2 │", "│    4 │"] {
        assert!(report.contains(conc), "{report}");
    }
}

#[test]
fn open_loop_at_two_per_second() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server
        .run()
        .flags("--prompt 'Say hello' --open-loop --rate 2 --number 8 --max-tokens 8 --seed 1")
        .ok_dir("rate_2.0_number_8");
    let rows = run.rows();
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r.success));
    let first = rows
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .fold(f64::INFINITY, f64::min);
    let last = rows
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .fold(0.0, f64::max);
    assert!(
        last - first < 4.0 + 0.5,
        "the schedule ends at number/rate = 4 s: {}",
        last - first
    );
    let s = run.summary();
    assert_eq!(s["Concurrency"], -1);
    assert_eq!(s["Request Rate (req/s)"], 2.0);
}

/// The server's greedy answer to `prompt`, as text.
fn greedy_answer(server: &RealServer, prompt: &str, max_tokens: u32) -> String {
    let body = serde_json::json!({
        "model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
        "temperature": 0.0, "stream": false,
    });
    let resp = reqwest::blocking_post(
        &format!("{}/chat/completions", server.v1()),
        &body.to_string(),
    );
    let v: serde_json::Value = serde_json::from_str(&resp).unwrap();
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

mod reqwest {
    //! A tiny blocking HTTP POST (the tests need one call outside llmperf).
    use std::io::{Read, Write};

    pub fn blocking_post(url: &str, body: &str) -> String {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = std::net::TcpStream::connect(host).unwrap();
        write!(
            s,
            "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.split_once("\r\n\r\n").unwrap().1.to_string()
    }
}

#[test]
fn non_stream_and_stop_sequences() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let answer = greedy_answer(&server, "Say hello", 24);
    let words: Vec<&str> = answer.split_whitespace().collect();
    assert!(words.len() >= 4, "answer: {answer:?}");
    let stop = words[2].trim_matches(|c: char| !c.is_alphanumeric());
    let run = server
        .run()
        .flags("--prompt 'Say hello' --number 3 --no-stream --max-tokens 24 --temperature 0")
        .flag("--stop", stop)
        .ok_dir("parallel_1_number_3");
    let rows = run.rows();
    for r in &rows {
        assert!(r.success && !r.is_stream, "{:?}", r.error);
        assert_eq!(r.ttft, r.latency, "non-stream TTFT is the latency");
        let n = r.completion_tokens.unwrap();
        assert!(
            n > 0 && n < 24,
            "the stop sequence {stop:?} ended generation early: {n} tokens"
        );
    }
}
