//! What the documented commands find around them: the files they name (`prompt.txt`, `trace.jsonl`,
//! `long_text.txt`, the `/path/to/…` files), a fake ModelScope hub serving the data sets and tokenizer ids
//! they read (the tokenizer ids backed by the real tokenizer files of the shared folder), a stand-in `vllm`
//! package that serves `--api local` / `local_vllm` with `llmperf serve-mock`, and a stand-in `wandb`.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::fake_hub::FakeHub;
use crate::tokens::shared_dir;

/// The tokenizer ids the commands (and the recipe scripts' defaults: `Qwen/Qwen3.5-4B`, evalscope_examples.sh's
/// `Qwen/Qwen2.5-0.5B-Instruct`) name, and the real tokenizer each one is
/// served with: Qwen's from the shared Qwen3 files, the rest from SmolLM2's.
pub const TOKENIZERS: [(&str, &str); 9] = [
    ("Qwen/Qwen2.5-0.5B-Instruct", "qwen3"),
    ("Qwen/Qwen2.5-VL-3B-Instruct", "qwen3"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen3"),
    ("Qwen/Qwen3-Embedding-0.6B", "qwen3"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3"),
    ("Qwen/Qwen3-VL-235B-A22B-Instruct", "qwen3"),
    ("Qwen/Qwen3.5-4B", "qwen3"),
    ("openai-mirror/gpt-oss-20b", "smollm2-135m-instruct"),
];

/// The local model folder `YOUR_MODEL` stands for (its tokenizer files; the output folder is its name).
pub fn your_model() -> PathBuf {
    shared_dir().join("tokenizers/qwen3")
}

/// Records in `trace.jsonl` (the workload_trace commands replay all of them unless `--number` says fewer).
pub const TRACE_RECORDS: usize = 6;

/// A fake ModelScope hub with every data set and tokenizer the commands read.
pub fn hub() -> FakeHub {
    let hub = FakeHub::modelscope();
    hub.dataset_file("AI-ModelScope/HC3-Chinese", "open_qa.jsonl", &open_qa())
        .dataset_file("swift/sharegpt", "common_zh_70k.jsonl", &sharegpt_zh())
        .dataset_file(
            "evalscope/trie-workloads",
            "office_work_8k.jsonl",
            &trie_office_work(),
        );
    for (id, dir) in TOKENIZERS {
        let dir = shared_dir().join("tokenizers").join(dir);
        for file in ["tokenizer.json", "tokenizer_config.json"] {
            let bytes = std::fs::read(dir.join(file))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
            hub.model_file(id, file, &bytes);
        }
    }
    hub
}

/// HC3-Chinese's `open_qa.jsonl` shape; every question is at least 128 characters long (the page's
/// `--min-prompt-length 128` keeps prompts of at least that many characters).
fn open_qa() -> Vec<u8> {
    let topics = [
        "机器学习",
        "量子计算",
        "光合作用",
        "区块链",
        "深度睡眠",
        "气候变化",
        "蛋白质折叠",
        "城市规划",
    ];
    let mut lines = String::new();
    for topic in topics {
        let q = format!(
            "请详细解释一下{topic}的基本原理、发展历史和主要应用场景，说明它目前面临哪些技术上与社会上的挑战，\
             并结合两三个具体的例子谈谈它对日常生活、产业结构以及社会经济已经产生了哪些深远的影响，\
             最后展望一下未来十年里{topic}可能出现的重要突破和需要警惕的风险，回答时请尽量条理清晰、层次分明。"
        );
        assert!(q.chars().count() >= 128, "{} chars", q.chars().count());
        let row = json!({"question": q, "human_answers": ["…"], "chatgpt_answers": ["…"]});
        lines.push_str(&format!("{row}\n"));
    }
    lines.into_bytes()
}

/// ShareGPT's `common_zh_70k.jsonl` shape: conversations of three exchanges.
fn sharegpt_zh() -> Vec<u8> {
    let mut lines = String::new();
    for i in 0..12 {
        let conversation: Vec<_> = (1..=3)
            .map(|t| {
                json!({"human": format!("第{i}个对话的第{t}个问题：请用几句话介绍一下你最喜欢的一本书。"),
                       "assistant": format!("第{t}个回答：这是一本关于旅行与成长的小说。")})
            })
            .collect();
        let row = json!({"conversation_id": i.to_string(), "category": "chat", "conversation": conversation});
        lines.push_str(&format!("{row}\n"));
    }
    lines.into_bytes()
}

/// The trie `office_work` trace shape: short traces with no tool-call wait.
fn trie_office_work() -> Vec<u8> {
    let mut lines = String::new();
    for i in 0..12u64 {
        let row = json!({"input_prompt_length": 40 + i, "num_turns": 2,
                         "assistant_response_length": [6, 5], "tool_call_output_length": [12, 10],
                         "tool_call_latency": [0.0, 0.0], "final_assistant_response_length": 4});
        lines.push_str(&format!("{row}\n"));
    }
    lines.into_bytes()
}

/// Writes the files the commands name by a relative path into `cwd` (where they run) and the `/path/to/…`
/// files into `cwd/inputs`.
pub fn write_inputs(cwd: &Path) {
    let write = |rel: &str, text: &str| {
        let path = cwd.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    let story = "Write a science fiction story about a lighthouse keeper on Mars, please begin your performance";
    write("prompt.txt", story);
    write("p.txt", story);
    let prompts: Vec<String> = (1..=8)
        .map(|i| format!("Question {i}: explain why the sky is blue in {i} sentences."))
        .collect();
    write("prompts.txt", &(prompts.join("\n") + "\n"));
    // The examples page's template.json.
    write(
        "template.json",
        r#"{"model": "%m", "messages": [{"role": "user", "content": "%p"}], "stream": true, "skip_special_tokens": false, "stop": ["<|im_end|>"], "temperature": 0.7, "max_tokens": 1024}"#,
    );
    let trace: Vec<String> = (0..TRACE_RECORDS)
        .map(|i| {
            let model = if i % 2 == 0 { "gpt-4" } else { "qwen-plus" };
            json!({"body": {"model": model, "messages": [{"role": "user", "content": format!("trace request {i}")}]},
                   "timestamp": 1_700_000_000.0 + 0.1 * i as f64, "completion_tokens": 3, "request_id": format!("req-{i}")})
            .to_string()
        })
        .collect();
    write("trace.jsonl", &(trace.join("\n") + "\n"));
    let long_text = long_text();
    write("long_text.txt", &long_text);
    write("inputs/long_text.txt", &long_text);
    write(
        "inputs/common_zh_70k.jsonl",
        &String::from_utf8(sharegpt_zh()).unwrap(),
    );
    let conversations: Vec<String> = (0..12)
        .map(|i| {
            json!([{"role": "user", "content": format!("Hello, I am user {i}")},
                   {"role": "assistant", "content": "Hi! How can I help you?"},
                   {"role": "user", "content": "Write me a short poem"},
                   {"role": "assistant", "content": "Roses are red."},
                   {"role": "user", "content": "Now make it rhyme better"}])
            .to_string()
        })
        .collect();
    write(
        "inputs/my_conversations.jsonl",
        &(conversations.join("\n") + "\n"),
    );
    let agentic: Vec<_> = (0..7)
        .map(|i| {
            json!([
                {"messages": [{"role": "system", "content": "You are a coding agent."},
                              {"role": "user", "content": format!("Fix the failing test number {i}")}],
                 "prompt_tokens": 20},
                {"messages": [{"role": "user", "content": "OBSERVATION: 3 tests failed"}], "prompt_tokens": 40}
            ])
        })
        .collect();
    write(
        "inputs/agentic_dataset.json",
        &json!({ "conversations": agentic }).to_string(),
    );
}

/// A few kilobytes of plain English (the prefix corpus; evalscope tiles a corpus shorter than the target).
fn long_text() -> String {
    let paragraph = "The lighthouse stood on a cliff above the grey sea, and every evening the keeper climbed \
                     its spiral stairs to light the lamp. Ships passed in the night, their crews grateful for \
                     the steady beam that warned them of the rocks below. Over the years the keeper came to \
                     know the moods of the water, the shapes of the clouds and the calls of the birds.\n";
    paragraph.repeat(40)
}

/// Writes the stand-in packages under `dir` and returns it (for `PYTHONPATH`):
///
/// * `vllm.entrypoints.openai.api_server` logs how it was started to `$STANDIN_VLLM_LOG`, then becomes
///   `llmperf serve-mock --port <its --port>` (`$LLMPERF_BIN`), so `--api local` / `local_vllm` start,
///   wait for, benchmark and stop a real server process on evalscope's port;
/// * `wandb` records its calls to `$STANDIN_WANDB_LOG`, for `--wandb-api-key`.
pub fn standins(dir: &Path) -> PathBuf {
    let pkg = dir.join("vllm/entrypoints/openai");
    std::fs::create_dir_all(&pkg).unwrap();
    for init in ["vllm", "vllm/entrypoints", "vllm/entrypoints/openai"] {
        std::fs::write(dir.join(init).join("__init__.py"), "").unwrap();
    }
    std::fs::write(
        pkg.join("api_server.py"),
        r#"import json, os, sys
args = sys.argv[1:]
with open(os.environ["STANDIN_VLLM_LOG"], "w") as f:
    json.dump({"argv": args, "attention": os.environ.get("VLLM_ATTENTION_BACKEND")}, f)
port = args[args.index("--port") + 1]
os.execv(os.environ["LLMPERF_BIN"], ["llmperf", "serve-mock", "--port", port, "--mock-ttft-ms", "0", "--mock-itl-ms", "0"])
"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("wandb")).unwrap();
    std::fs::write(
        dir.join("wandb/__init__.py"),
        r#"import json, os
def _rec(call, **kw):
    with open(os.environ["STANDIN_WANDB_LOG"], "a") as f:
        f.write(json.dumps(dict(call=call, **kw)) + "\n")
class _Summary(dict):
    def update(self, d):
        _rec("summary", keys=len(d))
class _Run:
    summary = _Summary()
    def finish(self):
        _rec("finish")
def login(key=None, **kw):
    _rec("login", key=key)
def init(project=None, name=None, config=None, **kw):
    _rec("init", project=project)
    return _Run()
def log(data, **kw):
    _rec("log")
"#,
    )
    .unwrap();
    dir.to_path_buf()
}
