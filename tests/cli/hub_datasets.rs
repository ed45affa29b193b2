//! The built-in hub datasets without `--dataset-path`, as evalscope reads them: `openqa` (the default),
//! `share_gpt_*`, `longalpaca` and `trie_*` downloaded from a fake ModelScope hub on 127.0.0.1 into the
//! ModelScope cache, then reused from the cache (no second request); `--data-source huggingface` from a
//! fake Hugging Face hub; a cache hit with no hub at all; the offline error; tokenizer ids from ModelScope;
//! the token sent as the `modelscope` client sends it and written nowhere.

use std::path::Path;

use crate::common::fake_hub::{FakeHub, HF_COMMIT};
use crate::common::*;
use crate::tokens::shared_dir;

const SECRET: &str = "ms-secret-token-0815";

/// A run against `sim`'s chat endpoint with downloads allowed, its caches under `cache`, ModelScope at
/// `ms`, and no connection test.
fn online(sim: &llmperf::sim::SimServer, cache: &Path, ms: &FakeHub) -> Run {
    Run::at(sim, "/v1/chat/completions")
        .online(cache)
        .hub(ms)
        .flags("--no-test-connection")
}

fn openqa_lines() -> Vec<u8> {
    [
        r#"{"question": "什么是机器学习？", "human_answers": ["a"], "chatgpt_answers": ["b"]}"#,
        r#"{"question": " 为什么天空是蓝色的？ ", "human_answers": [], "chatgpt_answers": []}"#,
    ]
    .join("\n")
    .into_bytes()
}

fn sharegpt_lines(tag: &str) -> Vec<u8> {
    format!(
        "{}\n{}\n",
        serde_json::json!({"conversation_id": "1", "category": "x", "conversation": [
            {"human": format!("{tag} first question"), "assistant": "first answer"},
            {"human": format!("{tag} second question"), "assistant": "second answer"}]}),
        serde_json::json!({"conversation_id": "2", "category": "x", "conversation": [
            {"human": format!("{tag} only question"), "assistant": "only answer"}]}),
    )
    .into_bytes()
}

/// Every file under `dir`, read as text where it is text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    text
}

/// The user contents of the simulator's request bodies so far.
fn contents(sim: &llmperf::sim::SimServer) -> Vec<String> {
    sim.requests()
        .iter()
        .filter_map(|(_, body, _)| serde_json::from_str::<serde_json::Value>(body).ok())
        .filter_map(|b| {
            b["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str().map(str::to_string))
        })
        .collect()
}

#[test]
fn openqa_the_default_dataset_is_downloaded_from_modelscope_then_reused_from_the_cache() {
    let hub = FakeHub::modelscope();
    hub.dataset_file(
        "AI-ModelScope/HC3-Chinese",
        "open_qa.jsonl",
        &openqa_lines(),
    )
    .dataset_file("AI-ModelScope/HC3-Chinese", "README.md", b"# HC3");
    let sim = fast_sim();
    let cache = tempfile::tempdir().unwrap();
    // No --dataset: evalscope's quick start.
    let first = online(&sim, cache.path(), &hub)
        .flags("--number 2")
        .env("MODELSCOPE_API_TOKEN", SECRET);
    let o = first.output();
    let printed = format!("{}{}", ok(&o), stderr(&o));
    let cached = cache
        .path()
        .join("modelscope/datasets/AI-ModelScope--HC3-Chinese/snapshots/master/open_qa.jsonl");
    assert_eq!(std::fs::read(&cached).unwrap(), openqa_lines());
    let seen = hub.requests();
    assert_eq!(seen.len(), 1, "one file, nothing else: {seen:?}");
    assert_eq!(
        seen[0].target,
        "/api/v1/datasets/AI-ModelScope/HC3-Chinese/repo?Revision=master&FilePath=open_qa.jsonl"
    );
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {SECRET}"))
    );
    assert_eq!(
        seen[0].header("cookie"),
        Some(format!("m_session_id={SECRET}"))
    );
    assert_eq!(contents(&sim), ["什么是机器学习？", "为什么天空是蓝色的？"]);
    let args_json = first.single_run().args();
    assert_eq!(args_json["dataset"], "openqa");
    assert_eq!(args_json["data_source"], serde_json::Value::Null);
    assert!(
        !printed.contains(SECRET) && !all_text(first.out()).contains(SECRET),
        "the token is written nowhere"
    );

    // Second run: the cache answers, the hub sees nothing.
    online(&sim, cache.path(), &hub).flags("--number 2").ok();
    assert_eq!(hub.requests().len(), 1, "no second request");
    assert_eq!(contents(&sim).len(), 4);
}

#[test]
fn sharegpt_longalpaca_and_trie_are_downloaded_then_reused() {
    let hub = FakeHub::modelscope();
    hub.dataset_file("swift/sharegpt", "common_en_70k.jsonl", &sharegpt_lines("en"))
        .dataset_file("swift/sharegpt", "common_zh_70k.jsonl", &sharegpt_lines("zh"))
        .dataset_file(
            "AI-ModelScope/LongAlpaca-12k",
            "LongAlpaca-12k.json",
            br#"[{"instruction": " Summarise the paper. ", "output": "x"}, {"instruction": "Explain it.", "output": "y"}]"#,
        )
        .dataset_file("AI-ModelScope/LongAlpaca-12k", "README.md", b"# LongAlpaca")
        .dataset_file(
            "evalscope/trie-workloads",
            "code_qa_8k.jsonl",
            br#"{"input_prompt_length": 12, "num_turns": 1, "assistant_response_length": [4], "tool_call_output_length": [6], "tool_call_latency": [0.0], "final_assistant_response_length": 3}"#,
        );
    let sim = fast_sim();
    let cache = tempfile::tempdir().unwrap();
    let tokenizer = shared_dir().join("tokenizers/smollm2-135m-instruct");
    let cases: Vec<(String, &str)> = vec![
        (
            "--dataset share_gpt_en --number 2".into(),
            "swift/sharegpt/repo?Revision=master&FilePath=common_en_70k.jsonl",
        ),
        (
            "--dataset longalpaca --number 2".into(),
            "AI-ModelScope/LongAlpaca-12k/repo/tree?",
        ),
        (
            "--dataset share_gpt_zh_multi_turn --multi-turn --number 1 --max-turns 2".into(),
            "swift/sharegpt/repo?Revision=master&FilePath=common_zh_70k.jsonl",
        ),
        (
            format!(
                "--dataset trie_code_qa --multi-turn --number 1 --tokenizer-path '{}'",
                tokenizer.display()
            ),
            "evalscope/trie-workloads/repo?Revision=master&FilePath=code_qa_8k.jsonl",
        ),
    ];
    for (flags, expected) in &cases {
        let before = hub.requests().len();
        online(&sim, cache.path(), &hub).flags(flags).ok();
        let new: Vec<String> = hub.requests()[before..]
            .iter()
            .map(|r| r.target.clone())
            .collect();
        assert!(new.iter().any(|t| t.contains(expected)), "{flags}: {new:?}");
        // Again: from the cache.
        let now = hub.requests().len();
        online(&sim, cache.path(), &hub).flags(flags).ok();
        assert_eq!(
            hub.requests().len(),
            now,
            "{flags}: no request the second time"
        );
    }
    let ms = cache.path().join("modelscope/datasets");
    assert_eq!(
        std::fs::read(ms.join("swift--sharegpt/snapshots/master/common_en_70k.jsonl")).unwrap(),
        sharegpt_lines("en")
    );
    assert!(ms
        .join("AI-ModelScope--LongAlpaca-12k/snapshots/master/LongAlpaca-12k.json")
        .is_file());
    assert!(
        !ms.join("AI-ModelScope--LongAlpaca-12k/snapshots/master/README.md")
            .exists(),
        "only the data files"
    );
    assert!(ms
        .join("evalscope--trie-workloads/snapshots/master/code_qa_8k.jsonl")
        .is_file());
    let sent = contents(&sim);
    assert!(sent.contains(&"en second question".to_string()), "{sent:?}");
    assert!(
        sent.contains(&"Summarise the paper.".to_string()),
        "{sent:?}"
    );
    assert!(sent.contains(&"zh first question".to_string()), "{sent:?}");
}

#[test]
fn data_source_huggingface_reads_the_hugging_face_copy() {
    let hf = FakeHub::huggingface();
    let repo = "shareAI/ShareGPT-Chinese-English-90k";
    hf.dataset_file(
        repo,
        "sharegpt_jsonl/common_zh_70k.jsonl",
        &sharegpt_lines("hf"),
    );
    let ms = FakeHub::modelscope();
    let sim = fast_sim();
    let cache = tempfile::tempdir().unwrap();
    let flags = "--dataset share_gpt_zh --data-source huggingface --number 2";
    let first = online(&sim, cache.path(), &ms).hub(&hf).flags(flags);
    first.ok();
    let file = cache
        .path()
        .join("hf/datasets--shareAI--ShareGPT-Chinese-English-90k/snapshots")
        .join(HF_COMMIT)
        .join("sharegpt_jsonl/common_zh_70k.jsonl");
    assert_eq!(std::fs::read(&file).unwrap(), sharegpt_lines("hf"));
    assert_eq!(
        hf.requests()[0].target,
        format!("/datasets/{repo}/resolve/main/sharegpt_jsonl/common_zh_70k.jsonl")
    );
    assert!(ms.requests().is_empty(), "ModelScope is not asked");
    assert_eq!(first.single_run().args()["data_source"], "huggingface");
    assert!(contents(&sim).contains(&"hf second question".to_string()));
    // Again, with the hub gone: from the Hugging Face cache.
    drop(hf);
    online(&sim, cache.path(), &ms)
        .flags(flags)
        .env("HF_HUB_OFFLINE", "1")
        .ok();
}

#[test]
fn cached_copies_need_no_hub() {
    let cache = tempfile::tempdir().unwrap();
    // The current layout, and an older client's folder (`datasets/<owner>/<name>`).
    let new = cache
        .path()
        .join("modelscope/datasets/AI-ModelScope--HC3-Chinese/snapshots/master");
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(new.join("open_qa.jsonl"), openqa_lines()).unwrap();
    let old = cache.path().join("modelscope/datasets/swift/sharegpt");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("common_en_70k.jsonl"), sharegpt_lines("old")).unwrap();
    let sim = fast_sim();
    for dataset in ["openqa", "share_gpt_en"] {
        // Offline, and the endpoint is a closed port.
        Run::at(&sim, "/v1/chat/completions")
            .online(cache.path())
            .env("HF_HUB_OFFLINE", "1")
            .flags("--number 1 --no-test-connection")
            .flag("--dataset", dataset)
            .ok();
    }
    let sent = contents(&sim);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], "什么是机器学习？");
    assert!(sent[1].starts_with("old"), "{sent:?}");
}

#[test]
fn data_source_local_reads_the_dataset_id_as_a_folder() {
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().join("AI-ModelScope/HC3-Chinese");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("open_qa.jsonl"), openqa_lines()).unwrap();
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--data-source local --number 1 --no-test-connection");
    ok(&run.command().current_dir(cwd.path()).output().unwrap());
    assert_eq!(contents(&sim), ["什么是机器学习？"]);
}

#[test]
fn offline_the_error_names_the_files_and_where_they_were_fetched_from() {
    let cache = tempfile::tempdir().unwrap();
    let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions").online(cache.path());
    let err = run.fails(2);
    for needle in [
        "--dataset openqa",
        "open_qa.jsonl",
        "AI-ModelScope/HC3-Chinese",
        "http://127.0.0.1:9/api/v1/datasets/AI-ModelScope/HC3-Chinese/repo?Revision=master&FilePath=open_qa.jsonl",
        "--dataset-path",
        "--data-source huggingface",
        "Looked in",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(run.out_entries(), 0, "no output folder");
}

#[test]
fn a_tokenizer_id_is_downloaded_from_modelscope_with_the_saved_login() {
    let source = shared_dir().join("tokenizers/smollm2-135m-instruct");
    let repo = "AI-ModelScope/SmolLM2-135M-Instruct";
    let hub = FakeHub::modelscope();
    hub.require_token("ms-saved-login-token");
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        hub.model_file(repo, f, &std::fs::read(source.join(f)).unwrap());
    }
    hub.model_file(repo, "model.safetensors", b"weights are not fetched");
    let cache = tempfile::tempdir().unwrap();
    // The saved login (`modelscope login`), no MODELSCOPE_API_TOKEN.
    let home = cache.path().join("ms-home/credentials");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/modelscope/cookies"),
        home.join("cookies"),
    )
    .unwrap();
    let sim = fast_sim();
    let run = online(&sim, cache.path(), &hub)
        .flags("--dataset random --min-prompt-length 32 --max-prompt-length 32 --number 2")
        .flag("--tokenizer-path", repo);
    run.ok();
    let snapshot = cache
        .path()
        .join("modelscope/models/AI-ModelScope--SmolLM2-135M-Instruct/snapshots/master");
    assert_eq!(
        std::fs::read(snapshot.join("tokenizer.json")).unwrap(),
        std::fs::read(source.join("tokenizer.json")).unwrap()
    );
    assert!(!snapshot.join("model.safetensors").exists());
    let seen: Vec<String> = hub.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        seen[0],
        format!("/api/v1/models/{repo}/repo/files?Revision=master&Recursive=True")
    );
    assert!(seen.contains(&format!(
        "/api/v1/models/{repo}/repo?Revision=master&FilePath=tokenizer.json"
    )));
    assert!(!all_text(run.out()).contains("ms-saved-login-token"));
    assert_eq!(sim.requests().len(), 2);
}

#[test]
fn a_private_repo_without_a_valid_login_is_a_clear_error() {
    let hub = FakeHub::modelscope();
    hub.require_token("ms-saved-login-token");
    hub.dataset_file(
        "AI-ModelScope/HC3-Chinese",
        "open_qa.jsonl",
        &openqa_lines(),
    );
    let cache = tempfile::tempdir().unwrap();
    // An expired saved login is not used; the deprecated MODELSCOPE_DOMAIN names the hub.
    let home = cache.path().join("ms-home/credentials");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/modelscope/cookies-expired"),
        home.join("cookies"),
    )
    .unwrap();
    let err = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
        .online(cache.path())
        .env_remove("MODELSCOPE_ENDPOINT")
        .env("MODELSCOPE_DOMAIN", hub.endpoint())
        .fails(2);
    assert!(
        err.contains("HTTP 401") && err.contains("MODELSCOPE_API_TOKEN"),
        "{err}"
    );
    let seen = hub.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("authorization"),
        None,
        "the expired login is not sent"
    );
    assert!(
        !cache.path().join("modelscope/datasets").exists(),
        "nothing half-written"
    );
    assert!(!err.contains("ms-expired-token"));
}
