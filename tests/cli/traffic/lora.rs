//! `--lora-modules NAME[=WEIGHT]` with `--lora-assignment`: each request's `model` drawn from the list
//! (seeded, the same again under the same seed), round-robin exact, a conversation keeps its model, and
//! the per-model breakdown equals a recount from the stored rows.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{column, request_log};
use crate::common::{json_file, Run};
use crate::tokens::tokenizer_dir;

/// The `model` of each stored body, in insertion order.
fn models(db: &std::path::Path) -> Vec<String> {
    column(db, "request")
        .into_iter()
        .map(|b| {
            let v: Value = serde_json::from_str(&b.unwrap()).unwrap();
            v["model"].as_str().unwrap().to_string()
        })
        .collect()
}

fn mock(flags: &str) -> Run {
    Run::new()
        .flags(
            "--api mock --model base --mock-ttft-ms 0 --mock-itl-ms 0 --max-tokens 2 --prompt hi",
        )
        .flags(flags)
}

#[test]
fn a_weighted_mix_follows_its_weights_and_the_breakdown_recounts_the_rows() {
    let run = Run::new();
    let log = run.file("requests.jsonl", "");
    let run = mock("--number 3000 --parallel 32 --seed 4 --lora-modules sql=0.5 chat=0.3 code=0.2")
        .flag("--mock-request-log", &log)
        .flags("--extra-args '{\"ignore_eos\": true}'");
    let dir = run.ok_dir("parallel_32_number_3000");
    let stored = models(&dir.db());
    assert_eq!(stored.len(), 3000);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &stored {
        *counts.entry(m).or_default() += 1;
    }
    for (name, p) in [("sql", 0.5), ("chat", 0.3), ("code", 0.2)] {
        let n = 3000.0;
        let sd = (n * p * (1.0_f64 - p)).sqrt();
        let got = counts[name] as f64;
        assert!(
            (got - n * p).abs() < 5.0 * sd,
            "{name}: {got} of 3000 against {p}: {counts:?}"
        );
    }
    // The server saw the same models (and the connection test's, --model's).
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for l in request_log(&log) {
        *seen
            .entry(l["model"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(seen.remove("base"), Some(1));
    assert_eq!(
        seen.iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<BTreeMap<_, _>>(),
        counts
    );
    // The breakdown beside the summary, recounted from the rows.
    let breakdown = json_file(&dir.join("breakdown_by_model.json"));
    let keys: Vec<&String> = breakdown.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["sql", "chat", "code"], "in the order given");
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let summary = dir.summary();
    let duration = summary["Test Duration (s)"].as_f64().unwrap();
    for (name, n) in &counts {
        let (ok, latency, out): (i64, f64, i64) = conn
            .query_row(
                "SELECT SUM(success), AVG(latency), SUM(completion_tokens) FROM result \
                 WHERE json_extract(request, '$.model') = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        let b = &breakdown[name];
        assert_eq!(b["Total Requests"], *n as i64);
        assert_eq!(b["Success Requests"], ok);
        assert!(
            (b["Avg Latency (s)"].as_f64().unwrap() - latency).abs() < 1e-4,
            "{b}"
        );
        assert_eq!(b["Avg Output Tokens"], 2.0);
        let tput = out as f64 / duration;
        assert!(
            (b["Output Throughput (tok/s)"].as_f64().unwrap() - tput).abs() < 1e-3 * tput.max(1.0)
        );
    }
    // The HTML report has the per-model table.
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    let table = &html[html.find("Per model").expect("a per-model table")..];
    for name in ["sql", "chat", "code"] {
        assert!(
            table.contains(&format!("<th scope=\"row\">{name}</th>")),
            "{name}"
        );
    }
    // evalscope's summary stays flat: no per-model keys in it.
    assert!(summary
        .as_object()
        .unwrap()
        .keys()
        .all(|k| !k.contains("sql")));
}

#[test]
fn the_same_seed_draws_the_same_models_and_round_robin_is_exact() {
    let flags = "--number 200 --seed 9 --lora-modules a b c";
    let first = models(&mock(flags).ok_dir("parallel_1_number_200").db());
    let again = models(&mock(flags).ok_dir("parallel_1_number_200").db());
    assert_eq!(
        first, again,
        "the same seed, the same models in the same order"
    );
    assert_eq!(first.iter().collect::<BTreeSet<_>>().len(), 3);
    let other = models(
        &mock("--number 200 --seed 10 --lora-modules a b c")
            .ok_dir("parallel_1_number_200")
            .db(),
    );
    assert_ne!(first, other);
    let rr = models(
        &mock("--number 7 --lora-modules a b c --lora-assignment round-robin")
            .ok_dir("parallel_1_number_7")
            .db(),
    );
    assert_eq!(rr, ["a", "b", "c", "a", "b", "c", "a"]);
}

#[test]
fn a_conversation_keeps_its_model() {
    let run = Run::new()
        .flags("--api mock --model base --mock-ttft-ms 0 --mock-itl-ms 0 --multi-turn")
        .flags("--dataset random_multi_turn --min-turns 3 --max-turns 3")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(
            "--min-prompt-length 8 --max-prompt-length 12 --number 12 --parallel 3 --max-tokens 2",
        )
        .flags("--lora-modules x y z --seed 2");
    let dir = run.ok_dir("parallel_3_number_12");
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let mut stmt = conn
        .prepare("SELECT conversation_id, json_extract(request, '$.model') FROM result")
        .unwrap();
    let mut by_conv: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (c, m) = row.unwrap();
        by_conv.entry(c).or_default().insert(m);
    }
    assert_eq!(by_conv.len(), 12);
    assert!(by_conv.values().all(|ms| ms.len() == 1), "{by_conv:?}");
    let all: BTreeSet<&String> = by_conv.values().flatten().collect();
    assert!(
        all.len() > 1,
        "the conversations use several models: {all:?}"
    );
}

#[test]
fn bad_lora_flags_are_usage_errors() {
    for (flags, says) in [
        ("--lora-modules a=0", "--lora-modules"),
        (
            "--lora-modules a=2 b --lora-assignment round-robin",
            "--lora-assignment round-robin",
        ),
        ("--lora-assignment random", "--lora-assignment"),
        ("--lora-modules a a", "listed twice"),
    ] {
        let run = mock(flags);
        let err = run.fails(2);
        assert!(err.contains(says), "{flags}: {err}");
        assert_eq!(run.out_entries(), 0);
    }
}
