//! `--visualizer` and the deprecated `--*-api-key` flags through the CLI, with fake `wandb`, `swanlab` and
//! `clearml` packages on `PYTHONPATH` that record every call to a JSON-lines file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

const RECORDER: &str = r#"
import json, os
def _rec(call, **kw):
    with open(os.environ["FAKE_SDK_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps(dict(call=call, **kw)) + "\n")
"#;

const FAKE_WANDB: &str = r#"
class _Summary(dict):
    def update(self, d):
        _rec("summary", data=d)
class _Run:
    def __init__(self):
        self.summary = _Summary()
    def finish(self):
        _rec("finish")
def login(key=None, **kw):
    _rec("login", key=key)
def init(project=None, name=None, config=None, **kw):
    _rec("init", project=project, name=name, config=config, dir=os.environ.get("WANDB_DIR"))
    print("wandb: fake banner on stdout")
    return _Run()
def log(data, **kw):
    _rec("log", data=data)
"#;

const FAKE_SWANLAB: &str = r#"
class _Config:
    def update(self, d):
        _rec("config", data=d)
config = _Config()
def login(**kw):
    _rec("login", **kw)
def init(**kw):
    _rec("init", **kw)
def log(data):
    _rec("log", data=data)
def finish():
    _rec("finish")
"#;

const FAKE_CLEARML: &str = r#"
class _Logger:
    def report_scalar(self, title, series, value, iteration):
        _rec("scalar", title=title, series=series, value=value, iteration=iteration)
    def report_single_value(self, name, value):
        _rec("single", name=name, value=value)
class Task:
    class TaskTypes:
        testing = "testing"
    def __init__(self):
        self._logger = _Logger()
    @classmethod
    def init(cls, **kw):
        _rec("init", **kw)
        return cls()
    def connect(self, config):
        _rec("connect", config=config)
    def get_logger(self):
        return self._logger
    def close(self):
        _rec("finish")
"#;

/// A folder with one fake package `name` whose `__init__.py` is the recorder plus `body`.
fn fake_sdk(dir: &Path, name: &str, body: &str) -> PathBuf {
    let root = dir.join(format!("fake-{name}"));
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(
        root.join(name).join("__init__.py"),
        format!("{RECORDER}{body}"),
    )
    .unwrap();
    root
}

/// Two mock runs (5 and 7 requests) with the fake SDK at `pythonpath` recording its calls to `log`.
fn run_with(pythonpath: &Path, log: &Path, extra: &[&str]) -> Run {
    Run::new()
        .flags("--api mock --model org/m --prompt hi --parallel 1 2 --number 5 7 --max-tokens 3")
        .flags("--mock-ttft-ms 1 --mock-itl-ms 1")
        .args(extra)
        .env("PYTHONPATH", pythonpath)
        .env("FAKE_SDK_LOG", log)
        .env_remove("WANDB_API_KEY")
}

fn read_calls(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn named<'a>(calls: &'a [Value], call: &str) -> Vec<&'a Value> {
    calls.iter().filter(|c| c["call"] == call).collect()
}

#[test]
fn wandb_gets_the_running_metrics_per_request_and_each_run_summary() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = fake_sdk(dir.path(), "wandb", FAKE_WANDB);
    let log = dir.path().join("calls.jsonl");
    let run = run_with(&sdk, &log, &["--visualizer", "wandb"]);
    run.ok();
    let calls = read_calls(&log);
    assert_eq!(calls[0]["call"], "init", "{calls:?}");
    assert!(named(&calls, "login").is_empty(), "no key, no login");
    let init = &calls[0];
    assert_eq!(init["project"], "perf_benchmark");
    let name = init["name"].as_str().unwrap();
    assert!(
        name.starts_with("m_") && name.len() == "m_20260101_000000".len(),
        "{name}"
    );
    assert_eq!(init["config"]["model"], "org/m");
    assert_eq!(init["config"]["number"], serde_json::json!([5, 7]));
    assert_eq!(init["config"]["visualizer"], "wandb");
    let root = run_root(run.out(), "m");
    assert_eq!(init["dir"], root.to_str().unwrap());

    // evalscope's running message after every measured request: 5 + 7 of them, cumulative per run.
    let logs = named(&calls, "log");
    assert_eq!(logs.len(), 12);
    let first_key = logs[0]["data"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(first_key, "Test Duration (s)");
    let totals: Vec<u64> = logs
        .iter()
        .map(|l| l["data"]["Total Requests"].as_u64().unwrap())
        .collect();
    assert_eq!(totals, [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(logs[6]["data"]["Concurrency"], 2);

    let summaries = named(&calls, "summary");
    assert_eq!(summaries.len(), 2);
    assert_eq!(
        summaries[0]["data"]["parallel_1_number_5/Success Requests"],
        5
    );
    assert_eq!(
        summaries[1]["data"]["parallel_2_number_7/Total Requests"],
        7
    );
    assert_eq!(calls.last().unwrap()["call"], "finish");
    assert_eq!(named(&calls, "finish").len(), 1);

    // The SDK's own output goes to the log, not into the protocol.
    let text = std::fs::read_to_string(root.join("benchmark.log")).unwrap();
    assert!(text.contains("fake banner on stdout"), "{text}");
    let args = json_file(&root.join("parallel_1_number_5/benchmark_args.json"));
    assert_eq!(args["visualizer"], "wandb");
}

#[test]
fn deprecated_wandb_key_reaches_the_sdk_only_through_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = fake_sdk(dir.path(), "wandb", FAKE_WANDB);
    let log = dir.path().join("calls.jsonl");
    let key = "sekrit-KEY-4711";
    let run = run_with(&sdk, &log, &["--wandb-api-key", key]);
    let output = run.output();
    let stdout = ok(&output);
    let stderr = stderr(&output);
    let calls = read_calls(&log);
    let logins = named(&calls, "login");
    assert_eq!(logins.len(), 1);
    assert_eq!(logins[0]["key"], key);
    assert_eq!(named(&calls, "log").len(), 12);
    assert!(stderr.contains("--wandb-api-key is deprecated"), "{stderr}");
    assert!(
        !stdout.contains(key) && !stderr.contains(key),
        "key printed"
    );
    let all = files_under(run.out());
    assert!(all.len() > 10);
    for f in all {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "key written to {}",
            f.display()
        );
    }
    let args = json_file(&run_root(run.out(), "m").join("parallel_1_number_5/benchmark_args.json"));
    assert_eq!(args["wandb_api_key"], "**********");
    assert_eq!(args["visualizer"], "wandb");
}

#[test]
fn swanlab_local_mode_and_clearml_scalars() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = fake_sdk(dir.path(), "swanlab", FAKE_SWANLAB);
    let log = dir.path().join("swanlab.jsonl");
    run_with(&sdk, &log, &[])
        .flags("--swanlab-api-key local --swanlab-host http://127.0.0.1:1 --name exp")
        .ok();
    let calls = read_calls(&log);
    assert!(
        named(&calls, "login").is_empty(),
        "local mode never logs in"
    );
    let init = named(&calls, "init");
    assert_eq!(init[0]["mode"], "local");
    assert_eq!(init[0]["name"], "exp");
    assert_eq!(init[0]["project"], "perf_benchmark");
    // 12 running messages, then one flattened summary per run.
    let logs = named(&calls, "log");
    assert_eq!(logs.len(), 14);
    assert_eq!(logs[13]["data"]["parallel_2_number_7/Success Requests"], 7);
    assert_eq!(calls.last().unwrap()["call"], "finish");

    let sdk = fake_sdk(dir.path(), "clearml", FAKE_CLEARML);
    let log = dir.path().join("clearml.jsonl");
    run_with(&sdk, &log, &["--visualizer", "clearml"]).ok();
    let calls = read_calls(&log);
    let init = named(&calls, "init");
    assert_eq!(init[0]["project_name"], "perf_benchmark");
    assert_eq!(init[0]["task_type"], "testing");
    assert_eq!(named(&calls, "connect")[0]["config"]["model"], "org/m");
    let scalars = named(&calls, "scalar");
    let total: Vec<&&Value> = scalars
        .iter()
        .filter(|s| s["series"] == "Total Requests")
        .collect();
    assert_eq!(total.len(), 12);
    assert_eq!(total[11]["iteration"], 11);
    assert_eq!(total[11]["title"], "Performance Metrics");
    assert!(named(&calls, "single")
        .iter()
        .any(|s| s["name"] == "parallel_1_number_5/Total Requests"));
    assert_eq!(calls.last().unwrap()["call"], "finish");
}

#[test]
fn a_missing_sdk_fails_before_anything_runs_with_an_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = fake_sdk(
        dir.path(),
        "clearml",
        "raise ImportError(\"No module named 'clearml'\")\n",
    );
    let run = run_with(
        &sdk,
        &dir.path().join("calls.jsonl"),
        &["--visualizer", "clearml"],
    );
    let stderr = run.fails(1);
    assert!(stderr.contains("--visualizer clearml"), "{stderr}");
    assert!(stderr.contains("pip install clearml"), "{stderr}");
    assert_eq!(run.out_entries(), 0, "nothing was created");
}
