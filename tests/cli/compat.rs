//! evalscope flags that only exist for compatibility, and argparse-style prefixes of long flags.

use crate::common::*;

#[test]
fn tuning_flags_are_recorded_and_prefixes_are_accepted() {
    let sim = fast_sim();
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    ok(&llmperf(
        out.path(),
        &[
            "--url",
            &url,
            "--model",
            "mock-model",
            "--prompt",
            "hello",
            "--number",
            "2",
            "--max-tok",
            "3",
            "--num-workers",
            "4",
            "--queue-size-mult",
            "0",
            "--in-flight-task-multiplier",
            "7",
        ],
    ));
    let root = run_root(out.path(), "mock-model");
    let args = json_file(&root.join("parallel_1_number_2/benchmark_args.json"));
    assert_eq!(args["num_workers"], 4);
    assert_eq!(
        args["queue_size_multiplier"], 1,
        "≤ 0 counts as 1, as evalscope"
    );
    assert_eq!(args["in_flight_task_multiplier"], 7);
    assert_eq!(args["max_tokens"], 3, "--max-tok is --max-tokens");
    let body: serde_json::Value = serde_json::from_str(&sim.requests()[1].1).unwrap();
    assert_eq!(body["max_tokens"], 3);
}

#[test]
fn bad_tuning_values_and_ambiguous_prefixes_are_usage_errors() {
    let out = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["--num-workers", "-1"], "--num-workers"),
        (vec!["--max", "5"], "--max"),
        (
            vec![
                "--dataset",
                "speed_benchmark",
                "--dataset-args",
                r#"{"target_input_len": 5}"#,
            ],
            "takes no dataset args",
        ),
    ] {
        let mut all = vec!["--model", "m", "--prompt", "p"];
        if args[0] == "--dataset" {
            all.pop();
            all.pop();
        }
        all.extend(args.iter().copied());
        let o = llmperf(out.path(), &all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "no output folder"
    );
}

#[test]
fn local_server_flags_need_a_local_api_and_a_server_to_start() {
    let out = tempfile::tempdir().unwrap();
    let o = llmperf(
        out.path(),
        &["--model", "m", "--prompt", "p", "--port", "9000"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--port applies only"));
    // No Python with vLLM and no .gguf model: a usage error naming both ways, before any output.
    let o = llmperf_env(
        out.path(),
        &[
            "--api",
            "local",
            "--model",
            "Qwen/Qwen3-0.6B",
            "--prompt",
            "p",
        ],
        &[("LLMPERF_PYTHON", "/bin/false")],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--api local: no local server") && err.contains("llama-server"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "no output folder"
    );
}
