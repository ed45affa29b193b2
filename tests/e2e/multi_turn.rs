//! `--multi-turn` against the real llama.cpp server: every conversation of three turns succeeds, the
//! server's `prompt_tokens` grow turn by turn as the history does, and its prompt cache serves most of
//! each later turn (`cached_tokens` over half the prompt).

use crate::server::RealServer;

fn smollm2() -> String {
    let shared = std::env::var("LLMPERF_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    shared
        .join("tokenizers/smollm2-135m-instruct")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn random_multi_turn_grows_the_prompt_and_hits_the_prefix_cache() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server
        .run_at("/chat/completions")
        .flags("--multi-turn --dataset random_multi_turn")
        .flag("--tokenizer-path", smollm2())
        .flags("--min-turns 3 --max-turns 3 --min-prompt-length 24 --max-prompt-length 32")
        .flags("--max-tokens 8 --parallel 1 --number 2 --name mt")
        .ok_dir("parallel_1_number_2");
    let conn = rusqlite::Connection::open(run.join("benchmark_data.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT conversation_id, turn_index, success, prompt_tokens, cached_tokens FROM result \
             ORDER BY conversation_id, turn_index",
        )
        .unwrap();
    let rows: Vec<(i64, i64, bool, i64, Option<i64>)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, i64>(2)? == 1,
                r.get(3)?,
                r.get(4)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 6, "two conversations of three turns: {rows:?}");
    let (mut cached, mut prompt) = (0i64, 0i64);
    for conv in rows.chunks(3) {
        for (k, t) in conv.iter().enumerate() {
            assert!(t.2, "turn {k} succeeded: {rows:?}");
            assert_eq!(t.1, k as i64);
            if k > 0 {
                assert!(
                    t.3 > conv[k - 1].3,
                    "prompt tokens grow with the history: {rows:?}"
                );
                cached += t.4.expect("llama.cpp reports cached_tokens");
                prompt += t.3;
            }
        }
    }
    let later_hit = cached as f64 / prompt as f64;
    assert!(
        later_hit > 0.5,
        "later turns mostly cached: {later_hit:.2} ({rows:?})"
    );
    let s = run.summary();
    assert_eq!(s["Avg Turns/Request"], 2.0);
    assert!(s["KV Cache Hit Rate (%)"].as_f64().unwrap() > 0.0, "{s}");
    assert!(run.join("trace_summary.json").is_file());
}
