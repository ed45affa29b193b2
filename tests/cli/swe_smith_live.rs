//! `--dataset swe_smith` without `--dataset-path` (evalscope's live construction) through the CLI: the
//! raw trajectories of `SWE-bench/SWE-smith-trajectories` (split `tool`, parquet shards written here in
//! the hub's layout) downloaded from a fake ModelScope hub — only the missing shards of the split — then
//! reused from the cache; the conversations the simulator received checked against the construction
//! rules with the real tokenizer (deltas of the trajectories' user and tool messages, no system or
//! assistant text, each turn's bare tokens within its budget, turns in `[--min-turns, --max-turns]`,
//! `max_tokens` drawn per request from `--max-tokens MIN MAX`), reproducible with `--seed`; evalscope's
//! documented command; `--data-source huggingface`; and the errors (no tokenizer, offline).

use std::path::Path;
use std::time::Duration;

use llmperf::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

use crate::common::fake_hub::{FakeHub, HF_COMMIT};
use crate::common::parquet::{parquet_bytes, Col};
use crate::common::Run;
use crate::multi_turn::turns;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

const REPO: &str = "SWE-bench/SWE-smith-trajectories";

/// Words the trajectories are written in: each is one qwen3 token after a space.
const WORDS: [&str; 32] = [
    "the", "file", "test", "code", "error", "line", "value", "function", "class", "return",
    "import", "module", "path", "data", "list", "string", "check", "run", "fix", "bug", "call",
    "name", "type", "case", "input", "output", "change", "patch", "repo", "issue", "model",
    "result",
];

/// `n` words drawn from a small generator seeded by `seed`, after `tag`.
fn text(tag: &str, seed: u64, n: usize) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = tag.to_string();
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push(' ');
        out.push_str(WORDS[(x >> 59) as usize % WORDS.len()]);
    }
    out
}

/// One trajectory's `messages` as the tool split stores them (a JSON string): a system prompt, the issue,
/// then `steps` pairs of an assistant tool call and the tool's observation (every other one as a list of
/// text parts), each observation `words` words long.
fn trajectory(id: u64, steps: usize, words: usize) -> String {
    let mut messages = vec![
        json!({"role": "system", "content": format!("SYSTEM{id} You are a helpful assistant that can interact with a computer.")}),
        json!({"role": "user", "content": [{"type": "text", "text": text(&format!("ISSUE{id}"), id, words)}]}),
    ];
    for step in 0..steps {
        let seed = id * 1000 + step as u64;
        messages.push(
            json!({"role": "assistant", "content": format!("ASSISTANT{id} I will run the tests."),
            "tool_calls": [{"id": format!("call_{seed}"), "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\": \"pytest\"}"}}]}),
        );
        let observation = text(&format!("OBS{id}x{step}"), seed, words);
        let content = if step % 2 == 0 {
            json!([{"type": "text", "text": observation}])
        } else {
            json!(observation)
        };
        messages.push(
            json!({"role": "tool", "content": content, "tool_call_id": format!("call_{seed}")}),
        );
    }
    serde_json::to_string(&messages).unwrap()
}

/// A parquet shard of the tool split: `messages` and the split's other columns.
fn shard(rows: &[(String, String)]) -> Vec<u8> {
    let ids: Vec<Option<&str>> = rows.iter().map(|r| Some(r.0.as_str())).collect();
    let messages: Vec<Option<&str>> = rows.iter().map(|r| Some(r.1.as_str())).collect();
    let n = rows.len();
    parquet_bytes(&[
        Col::Text("messages", messages),
        Col::Text("instance_id", ids.clone()),
        Col::Bool("resolved", (0..n).map(|i| Some(i % 2 == 0)).collect()),
        Col::Text("model", vec![Some("claude-3-7-sonnet-20250219"); n]),
        Col::Text("traj_id", ids),
        Col::Text("patch", vec![Some("diff --git a/x.py b/x.py"); n]),
    ])
}

/// The repository files: two shards of the tool split (long trajectories, one too short, one whose
/// `messages` is not JSON), one shard of each other split and the README. Returns them and the user
/// texts of the long trajectories (tool output as evalscope normalises it).
fn repo_files(
    trajectories: u64,
    steps: usize,
    words: usize,
) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let row = |id: u64| (format!("repo__{id}"), trajectory(id, steps, words));
    let half = trajectories / 2;
    let mut first: Vec<(String, String)> = (0..half).map(row).collect();
    first.push((
        "short".into(),
        trajectory(900, 1, 3).replace("ISSUE900", "TOOSHORT"),
    ));
    first.push((
        "broken".into(),
        format!("BROKEN {}", "x".repeat(words * 40)),
    ));
    let second: Vec<(String, String)> = (half..trajectories).map(row).collect();
    let other = shard(&[(
        "xml".into(),
        trajectory(950, steps, words).replace("ISSUE950", "XMLSPLIT"),
    )]);
    let user_texts = (0..trajectories)
        .flat_map(|id| {
            let issue = text(&format!("ISSUE{id}"), id, words);
            let obs =
                (0..steps).map(move |s| text(&format!("OBS{id}x{s}"), id * 1000 + s as u64, words));
            std::iter::once(issue).chain(obs)
        })
        .collect();
    let files = vec![
        ("README.md".to_string(), b"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: tool\n    path: data/tool-*\n---\n".to_vec()),
        ("data/tool-00000-of-00002.parquet".to_string(), shard(&first)),
        ("data/tool-00001-of-00002.parquet".to_string(), shard(&second)),
        ("data/xml-00000-of-00001.parquet".to_string(), other.clone()),
        ("data/ticks-00000-of-00001.parquet".to_string(), other),
    ];
    (files, user_texts)
}

fn fast_sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft: Duration::from_millis(0),
        itl: Duration::from_millis(0),
        prefix_cache: true,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// A conversation as sent: each turn's delta (its new user messages) and its request body.
struct Sent {
    deltas: Vec<Vec<String>>,
    bodies: Vec<Value>,
}

/// The conversations of one run folder, each turn's delta taken from the request history: the messages
/// after the previous request's history and the server's answer to it.
fn conversations(run_dir: &Path) -> Vec<Sent> {
    let rows = turns(&run_dir.join("benchmark_data.db"));
    let mut out: Vec<Sent> = Vec::new();
    for (conv, turn, body, ..) in rows {
        if turn == 0 {
            out.push(Sent {
                deltas: Vec::new(),
                bodies: Vec::new(),
            });
        }
        let sent = out.last_mut().unwrap();
        assert_eq!(
            sent.bodies.len() as i64,
            turn,
            "conversation {conv}: turns in order"
        );
        let messages = body["messages"].as_array().unwrap().clone();
        let start = match sent.bodies.last() {
            None => 0,
            Some(prev) => {
                let prev = prev["messages"].as_array().unwrap();
                assert_eq!(&messages[..prev.len()], &prev[..], "the history is resent");
                assert_eq!(
                    messages[prev.len()]["role"],
                    "assistant",
                    "the server's answer"
                );
                assert!(messages[prev.len()]["content"]
                    .as_str()
                    .unwrap()
                    .starts_with("hello"));
                prev.len() + 1
            }
        };
        let delta: Vec<String> = messages[start..]
            .iter()
            .map(|m| {
                assert_eq!(m["role"], "user", "{m}");
                m["content"].as_str().unwrap().to_string()
            })
            .collect();
        sent.deltas.push(delta);
        sent.bodies.push(body);
    }
    out
}

/// Checks one run's conversations against the construction rules: turns in `turns`, each delta's bare
/// tokens within its budget (the first turn's in `first`, the others at most `later.1`, every turn but
/// a trajectory's last filling its drawn budget), made of whole user messages of one trajectory in order
/// with at most the last one cut, and each body's `max_tokens` in `max_tokens`.
fn check_rules(
    sent: &[Sent],
    users: &[String],
    turns: (usize, usize),
    first: (usize, usize),
    later: (usize, usize),
    max_tokens: (u64, u64),
) {
    let tok = raw_tokenizer("qwen3");
    for (i, conv) in sent.iter().enumerate() {
        assert!(
            (turns.0..=turns.1).contains(&conv.deltas.len()),
            "conversation {i}: {} turns",
            conv.deltas.len()
        );
        let mut next: Option<usize> = None;
        for (t, delta) in conv.deltas.iter().enumerate() {
            let tokens: usize = delta.iter().map(|m| count(&tok, m)).sum();
            let (lo, hi) = if t == 0 { first } else { later };
            assert!(
                tokens <= hi,
                "conversation {i} turn {t}: {tokens} tokens > {hi}"
            );
            if t + 1 < conv.deltas.len() {
                assert!(
                    tokens >= lo,
                    "conversation {i} turn {t}: {tokens} tokens < {lo}"
                );
            }
            for (m, content) in delta.iter().enumerate() {
                for marker in ["SYSTEM", "ASSISTANT", "TOOSHORT", "BROKEN", "XMLSPLIT"] {
                    assert!(!content.contains(marker), "{marker} sent");
                }
                // The first message is a trajectory's issue, sent whole; the others follow it in
                // trajectory order (a cut one is not sent again).
                let at = match next {
                    None => users
                        .iter()
                        .position(|u| u == content)
                        .unwrap_or_else(|| panic!("not a trajectory's issue: {content:.60}")),
                    Some(n) => n,
                };
                assert!(
                    users[at].starts_with(content.as_str()),
                    "conversation {i} turn {t}: not the trajectory's next message: {content:.60}"
                );
                if users[at] != *content {
                    assert_eq!(m, delta.len() - 1, "only a turn's last message is cut");
                }
                next = Some(at + 1);
            }
        }
        for body in &conv.bodies {
            let n = body["max_tokens"].as_u64().unwrap();
            assert!((max_tokens.0..=max_tokens.1).contains(&n), "max_tokens {n}");
            assert_eq!(body["min_tokens"], max_tokens.0);
            assert_eq!(body["ignore_eos"], true);
        }
    }
}

const SMALL_ARGS: &str =
    r#"--dataset-args '{"first_turn_length": [40, 60], "subsequent_turn_length": [20, 30]}'"#;

/// The small live-construction run: 4 conversations of 2–3 turns, `max_tokens` drawn from 5–9.
fn small_run(sim: &SimServer, cache: &Path, seed: u64) -> Run {
    Run::at(sim, "/v1/chat/completions")
        .online(cache)
        .flags("--multi-turn --dataset swe_smith --max-tokens 5 9 --min-tokens 5")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags(SMALL_ARGS)
        .flags("--min-turns 2 --max-turns 3 --number 4 --parallel 2 --no-test-connection")
        .flags(r#"--extra-args '{"ignore_eos": true}'"#)
        .flag("--seed", seed.to_string())
}

#[test]
fn swe_smith_builds_conversations_from_the_hub_trajectories_then_reuses_the_cache() {
    let (files, users) = repo_files(7, 8, 14);
    let hub = FakeHub::modelscope();
    for (path, bytes) in &files {
        hub.dataset_file(REPO, path, bytes);
    }
    // The first shard is already in the cache (an interrupted earlier download): only the second is
    // fetched.
    let cache = tempfile::tempdir().unwrap();
    let snapshot = cache
        .path()
        .join("modelscope/datasets/SWE-bench--SWE-smith-trajectories/snapshots/master");
    std::fs::create_dir_all(snapshot.join("data")).unwrap();
    std::fs::write(
        snapshot.join("data/tool-00000-of-00002.parquet"),
        &files[1].1,
    )
    .unwrap();
    let sim = fast_sim();
    let first = small_run(&sim, cache.path(), 42).hub(&hub);
    first.ok();
    let seen: Vec<String> = hub.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        seen,
        [
            format!("/api/v1/datasets/{REPO}/repo/tree?Revision=master&Recursive=True&PageNumber=1&PageSize=200"),
            format!("/api/v1/datasets/{REPO}/repo?Revision=master&FilePath=data%2Ftool-00001-of-00002.parquet"),
        ],
        "the listing, then the missing shard of the tool split only"
    );
    assert_eq!(
        std::fs::read(snapshot.join("data/tool-00001-of-00002.parquet")).unwrap(),
        files[2].1
    );
    assert!(!snapshot.join("data/xml-00000-of-00001.parquet").exists());
    assert!(!snapshot.join("README.md").exists());
    let run_dir = first.single_run();
    let sent = conversations(&run_dir);
    assert_eq!(sent.len(), 4, "--number conversations");
    check_rules(&sent, &users, (2, 3), (40, 60), (20, 30), (5, 9));
    let drawn: std::collections::BTreeSet<u64> = sent
        .iter()
        .flat_map(|c| c.bodies.iter().map(|b| b["max_tokens"].as_u64().unwrap()))
        .collect();
    assert!(drawn.len() > 1, "max_tokens drawn per request: {drawn:?}");
    let args = run_dir.args();
    assert_eq!(args["dataset"], "swe_smith");
    assert_eq!(args["dataset_path"], Value::Null);

    // Again with the same --seed: from the cache (the hub sees nothing), the same conversations.
    let again = small_run(&sim, cache.path(), 42).hub(&hub);
    again.ok();
    assert_eq!(
        hub.requests().len(),
        seen.len(),
        "no request the second time"
    );
    let deltas = |s: &[Sent]| s.iter().map(|c| c.deltas.clone()).collect::<Vec<_>>();
    let mut a = deltas(&sent);
    let mut b = deltas(&conversations(&again.single_run()));
    a.sort();
    b.sort();
    assert_eq!(a, b, "--seed 42 builds the same conversations");
    // Another seed: another draw.
    let other = small_run(&sim, cache.path(), 7).hub(&hub);
    other.ok();
    let mut c = deltas(&conversations(&other.single_run()));
    c.sort();
    assert_ne!(a, c, "--seed 7 draws other conversations");
}

#[test]
fn swe_smith_live_runs_the_documented_command() {
    // evalscope's multi_turn.md, as written (YOUR_MODEL: the qwen3 tokenizer; the URL: the simulator).
    let (files, users) = repo_files(24, 14, 1250);
    let hub = FakeHub::modelscope();
    for (path, bytes) in &files {
        hub.dataset_file(REPO, path, bytes);
    }
    let cache = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let model = tokenizer_dir("qwen3");
    let run = Run::new()
        .online(cache.path())
        .hub(&hub)
        .flag("--model", &model)
        .flag("--url", format!("{}/v1/chat/completions", sim.base_url()))
        .flags("--api openai --dataset swe_smith")
        .flag("--tokenizer-path", &model)
        .flags("--max-tokens 512 1024 --min-tokens 512 --multi-turn")
        .flags(r#"--dataset-args '{
      "first_turn_length": [4096, 8192],
      "subsequent_turn_length": [512, 1024]
  }'"#)
        .flags(r#"--min-turns 3 --max-turns 8 --seed 42 --number 10 20 --parallel 5 10 --extra-args '{"ignore_eos": true}'"#)
        .flag("--name", "swe");
    run.ok();
    for (dir, number) in [("parallel_5_number_10", 10), ("parallel_10_number_20", 20)] {
        let sent = conversations(&run.run_dir(dir));
        assert_eq!(sent.len(), number, "{dir}");
        check_rules(
            &sent,
            &users,
            (3, 8),
            (4096, 8192),
            (512, 1024),
            (512, 1024),
        );
    }
}

#[test]
fn swe_smith_live_reads_the_hugging_face_copy_with_data_source_huggingface() {
    let (files, users) = repo_files(5, 8, 14);
    let hf = FakeHub::huggingface();
    for (path, bytes) in &files {
        hf.dataset_file(REPO, path, bytes);
    }
    let cache = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let run = small_run(&sim, cache.path(), 1)
        .hub(&hf)
        .flags("--data-source huggingface");
    run.ok();
    let seen: Vec<String> = hf.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(seen[0], format!("/api/datasets/{REPO}/revision/main"));
    assert_eq!(
        seen.len(),
        3,
        "the listing and the two tool shards: {seen:?}"
    );
    let snapshot = cache
        .path()
        .join("hf/datasets--SWE-bench--SWE-smith-trajectories/snapshots")
        .join(HF_COMMIT);
    assert!(snapshot.join("data/tool-00001-of-00002.parquet").is_file());
    check_rules(
        &conversations(&run.single_run()),
        &users,
        (2, 3),
        (40, 60),
        (20, 30),
        (5, 9),
    );
}

#[test]
fn swe_smith_live_errors_exit_2_before_any_request() {
    let cache = tempfile::tempdir().unwrap();
    // No tokenizer: evalscope's requirement, before anything is fetched.
    let hub = FakeHub::modelscope();
    let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
        .online(cache.path())
        .hub(&hub)
        .flags("--multi-turn --dataset swe_smith");
    let err = run.fails(2);
    assert!(err.contains("requires --tokenizer-path"), "{err}");
    assert!(err.contains("--dataset-path"), "{err}");
    assert!(hub.requests().is_empty());
    assert_eq!(run.out_entries(), 0);
    // Offline, in no cache: the files, the cache folder and the URLs it would have fetched.
    let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
        .online(cache.path())
        .env("HF_HUB_OFFLINE", "1")
        .flags("--multi-turn --dataset swe_smith")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    let err = run.fails(2);
    for needle in [
        "--dataset swe_smith",
        "the tool split's parquet files (data/tool-*.parquet)",
        "ModelScope dataset SWE-bench/SWE-smith-trajectories",
        "Looked in",
        "modelscope/datasets/SWE-bench--SWE-smith-trajectories/snapshots",
        "HF_HUB_OFFLINE",
        "http://127.0.0.1:9/api/v1/datasets/SWE-bench/SWE-smith-trajectories/repo/tree?Revision=master&Recursive=True&PageNumber=1&PageSize=200",
        "--dataset-path",
        "--data-source huggingface",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(run.out_entries(), 0);
    // Budgets no trajectory can meet: the pre-filter's numbers.
    let (files, _) = repo_files(2, 2, 14);
    for (path, bytes) in &files {
        hub.dataset_file(REPO, path, bytes);
    }
    let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
        .online(cache.path())
        .hub(&hub)
        .flags("--multi-turn --dataset swe_smith")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"));
    let err = run.fails(2);
    assert!(err.contains("no trajectory"), "{err}");
    assert!(err.contains("first_turn_length 65000"), "{err}");
    assert_eq!(run.out_entries(), 0);
}
