//! evalscope flags that only exist for compatibility, argparse-style prefixes of long flags, and argparse's
//! last-one-wins for a flag given twice.

use crate::common::*;

#[test]
fn tuning_flags_are_recorded_and_prefixes_are_accepted() {
    let sim = fast_sim();
    let args = Run::at(&sim, "/v1/chat/completions")
        .model("mock-model")
        .flags("--prompt hello --number 2 --max-tok 3 --num-workers 4 --queue-size-mult 0")
        .flags("--in-flight-task-multiplier 7")
        .ok_dir("parallel_1_number_2")
        .args();
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
    for (args, needle) in [
        ("--model m --prompt p --num-workers -1", "--num-workers"),
        ("--model m --prompt p --max 5", "--max"),
        (
            r#"--model m --dataset speed_benchmark --dataset-args '{"target_input_len": 5}'"#,
            "takes no dataset args",
        ),
    ] {
        let run = Run::new().flags(args);
        let err = run.fails(2);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(run.out_entries(), 0, "{args:?}: no output folder");
    }
}

#[test]
fn local_server_flags_need_a_local_api_and_a_server_to_start() {
    let run = Run::new().flags("--model m --prompt p --port 9000");
    assert!(run.fails(2).contains("--port applies only"));
    assert_eq!(run.out_entries(), 0, "no output folder");
    // No Python with vLLM and no .gguf model: a usage error naming both ways, before any output.
    let run = Run::new()
        .flags("--api local --model Qwen/Qwen3-0.6B --prompt p")
        .env("LLMPERF_PYTHON", "/bin/false");
    let err = run.fails(2);
    assert!(
        err.contains("--api local: no local server") && err.contains("llama-server"),
        "{err}"
    );
    assert_eq!(run.out_entries(), 0, "no output folder");
}

#[test]
fn local_vllm_without_vllm_is_a_usage_error_before_anything_is_written() {
    // A real Python whose path holds no vLLM: Python's own "Error while finding module specification" is
    // never reached; the error says what is missing and how to get it.
    let empty = tempfile::tempdir().unwrap();
    let run = Run::new()
        .flags("--api local_vllm --model Qwen/Qwen3-0.6B --prompt p --number 1")
        .env("LLMPERF_PYTHON", "python3")
        .env("PYTHONPATH", empty.path())
        .env("PYTHONNOUSERSITE", "1");
    let err = run.fails(2);
    assert_eq!(
        err.lines().next().unwrap(),
        "error: --api local_vllm: vLLM is not installed for python3: `python3 -m vllm.entrypoints.openai.api_server` cannot be found (pip install vllm, or set LLMPERF_PYTHON to a Python that has it)"
    );
    assert!(!err.contains("Error while finding module"), "{err}");
    assert_eq!(run.out_entries(), 0, "no output folder");
}

#[test]
fn a_repeated_flag_keeps_its_last_value_as_in_argparse() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--prompt hello --min-tokens 128 --max-tokens 256 --min-tokens 2 --max-tokens 3")
        .flags("--parallel 1 2 --number 4 5 --parallel 2 --number 3");
    let dir = run.ok_dir("parallel_2_number_3");
    assert_eq!(dir.rows().len(), 3);
    let args = dir.args();
    assert_eq!(
        (args["min_tokens"].clone(), args["max_tokens"].clone()),
        (2.into(), 3.into())
    );
    assert_eq!(
        (args["parallel"].clone(), args["number"].clone()),
        (2.into(), 3.into())
    );
    let body: serde_json::Value = serde_json::from_str(&sim.requests()[1].1).unwrap();
    assert_eq!(
        (&body["min_tokens"], &body["max_tokens"]),
        (&2.into(), &3.into())
    );
    let runs = std::fs::read_dir(run.root())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count();
    assert_eq!(runs, 1, "one run: the last --parallel/--number only");
}
