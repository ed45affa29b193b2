//! `--dataset mooncake_trace / burstgpt_trace / azure_trace` through the CLI against the simulator: prompts
//! of the recorded lengths (words on the simulator, exact tokens with `--tokenizer-path`), shared Mooncake
//! blocks served from the simulator's prefix cache, recorded offsets kept within the reported send lag,
//! `max_tokens` + `ignore_eos` from `match_output_length`, the fidelity keys, and bad lines named with their
//! file (exit 2, nothing written).

use std::path::Path;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::Value;

use crate::common::Run;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

/// `(request body, prompt_tokens, cached_tokens, scheduled_time, send_time, intended_prompt_tokens)` by
/// schedule.
type TraceRow = (Value, i64, Option<i64>, f64, f64, Option<i64>);

fn trace_rows(db: &Path) -> Vec<TraceRow> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT request, prompt_tokens, cached_tokens, scheduled_time, send_time, intended_prompt_tokens \
             FROM result ORDER BY scheduled_time, send_time",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let body: String = r.get(0)?;
            Ok((
                serde_json::from_str(&body).unwrap(),
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

fn replay(url: &str, dataset: &str, file: &Path, extra: &[&str]) -> (Vec<TraceRow>, Value) {
    let run = Run::with_url(url)
        .flags("--open-loop")
        .flag("--dataset", dataset)
        .flag("--dataset-path", file)
        .flags("--name replay --max-tokens 2")
        .args(extra)
        .ok_dir("rate_-1.0_number_1000");
    (trace_rows(&run.db()), run.summary())
}

/// Each request's send offset from the first, against the trace's: the difference of two lags, so within
/// the largest lag the summary reports.
fn assert_offsets_within_lag(rows: &[TraceRow], want_s: &[f64], summary: &Value) {
    let max_lag_ms = summary["Trace Send Lag Max (ms)"]
        .as_f64()
        .expect("lag key");
    for (row, want) in rows.iter().zip(want_s) {
        let sent = row.4 - rows[0].4;
        assert!(
            ((sent - want) * 1e3).abs() <= max_lag_ms + 0.01,
            "sent at +{sent} s, trace +{want} s, max lag {max_lag_ms} ms"
        );
        assert!(
            ((row.3 - rows[0].3) - want).abs() < 1e-3,
            "scheduled at the trace offset"
        );
    }
}

#[test]
fn mooncake_shared_hash_ids_are_exactly_the_cached_tokens() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        prefix_cache: true,
        ..SimConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mooncake.jsonl");
    // Block size 512: request 1 repeats both blocks of request 0 then adds a partial one; request 2 shares
    // only block 0; request 3 (same timestamp as 2) shares nothing.
    std::fs::write(
        &file,
        concat!(
            r#"{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [0, 1]}"#, "\n",
            r#"{"timestamp": 200, "input_length": 1300, "output_length": 3, "hash_ids": [0, 1, 2]}"#, "\n",
            r#"{"timestamp": 400, "input_length": 700, "output_length": 4, "hash_ids": [0, 3]}"#, "\n",
            r#"{"timestamp": 400, "input_length": 600, "output_length": 2, "hash_ids": [4, 5]}"#, "\n",
        ),
    )
    .unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let (rows, summary) = replay(
        &url,
        "mooncake_trace",
        &file,
        &[
            "--dataset-args",
            r#"{"match_output_length": true}"#,
            "--seed",
            "5",
        ],
    );
    assert_eq!(rows.len(), 4);
    let prompt: Vec<i64> = rows.iter().map(|r| r.1).collect();
    assert_eq!(
        prompt,
        [1024, 1300, 700, 600],
        "one word per recorded token"
    );
    let cached: Vec<i64> = rows.iter().map(|r| r.2.unwrap()).collect();
    assert_eq!(
        cached,
        [0, 1024, 512, 0],
        "exactly the shared 512-token blocks"
    );
    let max_tokens: Vec<i64> = rows
        .iter()
        .map(|r| r.0["max_tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(max_tokens, [5, 3, 4, 2]);
    assert!(rows.iter().all(|r| r.0["ignore_eos"] == true));
    assert_offsets_within_lag(&rows, &[0.0, 0.2, 0.4, 0.4], &summary);
    let implied = 100.0 * (1024.0 + 512.0) / 3624.0;
    let round4 = |x: f64| (x * 1e4).round() / 1e4;
    assert_eq!(summary["Trace Implied Cached Tokens (%)"], round4(implied));
    assert_eq!(
        summary["Trace Server Cached Tokens (%)"],
        round4(implied),
        "the simulator served what the trace implies"
    );
    assert_eq!(summary["Trace Requests"], 4);
    let keys: Vec<&String> = summary.as_object().unwrap().keys().collect();
    let first_extra = keys.iter().position(|k| k.starts_with("Trace ")).unwrap();
    assert!(
        keys[..first_extra].iter().any(|k| *k == "Total Requests"),
        "extras after evalscope's keys"
    );
}

#[test]
fn burstgpt_rows_replay_with_exact_token_lengths_at_their_offsets() {
    let sim = crate::common::fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("BurstGPT_sample.csv");
    std::fs::write(
        &file,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         100,ChatGPT,472,18,490,Conversation log\n\
         100.5,GPT-4,35,0,35,API log\n\
         100.6,ChatGPT,90,7,97,Conversation log\n\
         101.2,GPT-4,211,12,223,API log\n",
    )
    .unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let tok = tokenizer_dir("qwen3");
    let (rows, summary) = replay(
        &url,
        "burstgpt_trace",
        &file,
        &[
            "--tokenizer-path",
            &tok,
            "--dataset-args",
            r#"{"speed": 2, "match_output_length": true}"#,
        ],
    );
    assert_eq!(
        rows.len(),
        3,
        "the failed row (Response tokens 0) is skipped"
    );
    let raw = raw_tokenizer("qwen3");
    let template = llmperf::tokenizer::Tokenizer::load(&tok)
        .unwrap()
        .chat_token_count(
            &[serde_json::json!({"role": "user", "content": ""})],
            &Default::default(),
        )
        .unwrap();
    for (row, (input, output)) in rows.iter().zip([(472, 18), (90, 7), (211, 12)]) {
        let text = row.0["messages"][0]["content"].as_str().unwrap();
        assert_eq!(
            count(&raw, text) + template,
            input,
            "prompt + template = Request tokens"
        );
        assert_eq!(row.5, Some(input as i64), "intended prompt tokens stored");
        assert_eq!(row.0["max_tokens"], output);
        assert_eq!(row.0["ignore_eos"], true);
    }
    assert_offsets_within_lag(&rows, &[0.0, 0.3, 0.6], &summary);
    assert_eq!(summary["Trace Implied Cached Tokens (%)"], 0.0);
}

#[test]
fn azure_rows_replay_with_exact_word_lengths_and_date_time_offsets() {
    let sim = crate::common::fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("AzureLLMInferenceTrace_conv.csv");
    std::fs::write(
        &file,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n\
         2023-11-16 18:15:46.6805900,374,44\n\
         2023-11-16 18:15:46.9805900,396,109\n\
         2023-11-16 18:15:47.1305900,12,3\n",
    )
    .unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let (rows, summary) = replay(&url, "azure_trace", &file, &[]);
    let prompt: Vec<i64> = rows.iter().map(|r| r.1).collect();
    assert_eq!(
        prompt,
        [374, 396, 12],
        "the simulator counts the recorded lengths"
    );
    assert!(rows
        .iter()
        .all(|r| r.0["max_tokens"] == 2 && r.0.get("ignore_eos").is_none()));
    assert_offsets_within_lag(&rows, &[0.0, 0.3, 0.45], &summary);
}

#[test]
fn bad_trace_lines_name_the_file_and_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "mooncake_trace",
            "m.jsonl",
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1}\n{\"timestamp\": 5, \"input_length\": \"x\", \"output_length\": 1}\n",
            "line 2: input_length",
        ),
        (
            "burstgpt_trace",
            "b.csv",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,5,5,10,API log\n2,ChatGPT,5\n",
            "line 3: 3 field(s)",
        ),
        (
            "azure_trace",
            "a.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,5\n",
            "line 2: TIMESTAMP \"yesterday\"",
        ),
    ];
    for (dataset, name, text, want) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
            .flags("--open-loop")
            .flag("--dataset", dataset)
            .flag("--dataset-path", &file);
        let stderr = run.fails(2);
        assert!(
            stderr.contains(want) && stderr.contains(name),
            "{dataset}: {stderr}"
        );
        assert_eq!(run.out_entries(), 0, "{dataset}: nothing written");
    }
    let azure = dir.path().join("a.csv");
    let stderr = Run::with_url("http://127.0.0.1:9/v1")
        .flags("--dataset azure_trace")
        .flag("--dataset-path", &azure)
        .fails(2);
    assert!(
        stderr.contains("azure_trace requires open-loop mode"),
        "{stderr}"
    );
}
