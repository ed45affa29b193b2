//! `--api local_vllm` / `--api local`: llmperf starts the server itself. A stand-in `vllm` package on
//! `PYTHONPATH` records how it was started and runs the real llama.cpp server (the test venv's), so the
//! whole life cycle runs for real: start, readiness wait, benchmark, shutdown (also on Ctrl-C).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::server::{python, repo, ONE_AT_A_TIME};

const MODEL: &str = "local-smollm";

/// Writes the stand-in `vllm.entrypoints.openai.api_server` under `dir`; it logs its argv and vLLM
/// environment to `dir/standin.json`, then serves through scripts/llama_server.py.
fn standin(dir: &Path) {
    let pkg = dir.join("vllm/entrypoints/openai");
    std::fs::create_dir_all(&pkg).unwrap();
    for init in ["vllm", "vllm/entrypoints", "vllm/entrypoints/openai"] {
        std::fs::write(dir.join(init).join("__init__.py"), "").unwrap();
    }
    let script = repo().join("scripts/llama_server.py");
    let log = dir.join("standin.json");
    std::fs::write(
        pkg.join("api_server.py"),
        format!(
            r#"import json, os, runpy, sys
args = sys.argv[1:]
env = {{k: os.environ.get(k) for k in ["VLLM_USE_MODELSCOPE", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_ATTENTION_BACKEND"]}}
with open({log:?}, "w") as f:
    json.dump({{"argv": args, "env": env, "pid": os.getpid()}}, f)
get = lambda flag: args[args.index(flag) + 1]
sys.argv = ["llama_server.py", "--port", get("--port"), "--alias", get("--served-model-name")]
runpy.run_path({script:?}, run_name="__main__")
"#,
            log = log.to_str().unwrap(),
            script = script.to_str().unwrap()
        ),
    )
    .unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn port_open(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// The llmperf run for `api` with the stand-in on PYTHONPATH, or `None` when the test venv is absent.
fn local_run(api: &str, port: u16, dir: &Path) -> Option<Run> {
    let py: PathBuf = match python() {
        Ok(p) => p,
        Err(why) if std::env::var_os("CI").is_some() => panic!("real server required in CI: {why}"),
        Err(why) => {
            eprintln!("note: skipping a local-server test: {why}");
            return None;
        }
    };
    let run = Run::new()
        .flag("--api", api)
        .flag("--model", MODEL)
        .flag("--port", port.to_string())
        .flags("--prompt 'Say hello' --max-tokens 6")
        .env("LLMPERF_PYTHON", py)
        .env("PYTHONPATH", dir)
        .env("OMP_WAIT_POLICY", "PASSIVE");
    Some(run)
}

#[test]
fn local_vllm_starts_serves_and_stops_the_server() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    standin(dir.path());
    let port = free_port();
    let Some(run) = local_run("local_vllm", port, dir.path()) else {
        return;
    };
    // A stand-in nvidia-smi: two GPUs using 1 GiB and 2 GiB.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\ncase \"$1\" in -L) printf 'GPU 0: Fake (UUID: a)\\nGPU 1: Fake (UUID: b)\\n';; *) printf '1024\\n2048\\n';; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&smi, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = run
        .flags("--number 2 --attn-implementation sdpa")
        .env("PATH", path);
    let output = run.output();
    ok(&output);
    let console = stderr(&output);
    assert!(
        console.contains("Starting local server, please wait... (vLLM"),
        "{console}"
    );
    // Started exactly as evalscope starts vLLM.
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("standin.json")).unwrap())
            .unwrap();
    let argv: Vec<&str> = log["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let p = port.to_string();
    let tp = argv[argv
        .iter()
        .position(|a| *a == "--tensor-parallel-size")
        .unwrap()
        + 1];
    assert_eq!(
        argv,
        [
            "--model",
            MODEL,
            "--served-model-name",
            MODEL,
            "--tensor-parallel-size",
            tp,
            "--max-model-len",
            "32768",
            "--gpu-memory-utilization",
            "0.9",
            "--host",
            "0.0.0.0",
            "--port",
            &p,
            "--trust-remote-code",
            "--disable-log-requests",
            "--disable-log-stats"
        ]
    );
    assert_eq!(log["env"]["VLLM_USE_MODELSCOPE"], "True");
    assert_eq!(log["env"]["VLLM_WORKER_MULTIPROC_METHOD"], "spawn");
    assert_eq!(log["env"]["VLLM_ATTENTION_BACKEND"], "TORCH_SDPA");
    // The benchmark ran against it, at evalscope's local URL.
    let dir = run.run_dir("parallel_1_number_2");
    let rows = dir.rows();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r.success && r.completion_tokens.unwrap() > 0),
        "{rows:?}"
    );
    // The GPUs' memory (summed, GiB) fills max_gpu_memory_cost.
    let db = rusqlite::Connection::open(dir.db()).unwrap();
    let gpu: Vec<f64> = db
        .prepare("SELECT max_gpu_memory_cost FROM result")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(gpu, [3.0, 3.0]);
    let args = dir.args();
    assert_eq!(
        args["url"],
        format!("http://127.0.0.1:{port}/v1/chat/completions")
    );
    assert_eq!(
        (args["port"].as_u64(), args["attn_implementation"].as_str()),
        (Some(port as u64), Some("sdpa"))
    );
    // And stopped when llmperf ended.
    assert!(!port_open(port), "the server is gone after llmperf exits");
}

#[test]
fn local_picks_vllm_and_ctrl_c_stops_the_server() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    standin(dir.path());
    let port = free_port();
    let Some(run) = local_run("local", port, dir.path()) else {
        return;
    };
    let run = run.flags("--number 500");
    let child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the benchmark is under way (its database exists), then interrupt llmperf alone.
    let t0 = Instant::now();
    let started = || {
        std::fs::read_dir(run.out())
            .ok()
            .and_then(|mut stamps| stamps.next())
            .is_some_and(|stamp| {
                let run = stamp
                    .unwrap()
                    .path()
                    .join(MODEL)
                    .join("parallel_1_number_500");
                run.join("benchmark_data.db").exists()
            })
    };
    while !started() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the benchmark never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    signal(&child, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    let console = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{console}");
    assert!(
        console.contains(&format!("(vLLM for {MODEL} on port {port})")),
        "says which server: {console}"
    );
    assert!(
        console.contains("Terminating the child process"),
        "{console}"
    );
    assert!(!port_open(port), "the server is gone after Ctrl-C");
    let summary = run.run_dir("parallel_1_number_500").summary();
    assert_eq!(summary["Interrupted"], true);
}
