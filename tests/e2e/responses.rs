//! The OpenAI Responses API (`--api openai_responses`) against llama.cpp's real `POST /v1/responses`.

use crate::server::RealServer;

#[test]
fn responses_api_stream_and_whole_bodies() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    for (stream, dir) in [("--stream", "stream"), ("--no-stream", "whole")] {
        // The chat URL of evalscope's examples: rewritten to `/v1/responses`.
        let run = server
            .run_at("/chat/completions")
            .flags("--api openai_responses --prompt 'Write one sentence about lighthouses'")
            .flags("--max-tokens 12 --number 3 --parallel 2")
            .flag("--name", dir)
            .args(&[stream])
            .ok_dir("parallel_2_number_3");
        let rows = run.rows();
        assert_eq!(rows.len(), 3);
        for r in &rows {
            assert!(r.success, "{:?}", r.error);
            assert!(
                r.request.contains(r#""max_output_tokens": 12"#),
                "{}",
                r.request
            );
            assert!(
                r.prompt_tokens.unwrap() > 5,
                "input tokens from the server's usage"
            );
            let out_tokens = r.completion_tokens.unwrap();
            assert!((1..=12).contains(&out_tokens), "{out_tokens}");
            if stream == "--stream" {
                assert!(r.is_stream);
                assert!(r.ttft.unwrap() > 0.0 && r.ttft.unwrap() < r.latency.unwrap());
                // llama.cpp sends one `response.output_text.delta` per token.
                assert_eq!(r.chunk_times.len() as i64, out_tokens, "{r:?}");
            } else {
                assert!(!r.is_stream);
            }
        }
        let s = run.summary();
        assert_eq!(s["Failed Requests"], 0);
    }
}
