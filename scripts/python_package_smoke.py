"""Runs one benchmark sweep through the installed wheel's `llmperf.run_perf_benchmark` against the built-in
simulator (`api: mock`) and checks evalscope's result shape; called by scripts/check_python_package.sh with an
outputs folder."""

import argparse
import os
import signal
import sys
import warnings

import llmperf

out = sys.argv[1]
binary = llmperf.llmperf_binary()
assert os.path.dirname(binary) == os.path.dirname(sys.executable), f"the wheel's binary is used: {binary}"

config = {
    "api": "mock",
    "model": "smoke-model",
    "prompt": "hello there",
    "parallel": [1, 2],
    "number": [3, 4],
    "max_tokens": 8,
    "extra_args": {"ignore_eos": True},
    "outputs_dir": out,
    "sleep_interval": 0,
}
results = llmperf.run_perf_benchmark(config)
assert sorted(results) == ["parallel_1_number_3", "parallel_2_number_4"], sorted(results)
for name, number in [("parallel_1_number_3", 3), ("parallel_2_number_4", 4)]:
    run = results[name]
    assert set(run) == {"metrics", "percentiles", "trace_summary", "workload_throughput"}, set(run)
    metrics = run["metrics"]
    assert metrics["Total Requests"] == number and metrics["Failed Requests"] == 0, metrics
    assert metrics["Avg Output Tokens"] == 8.0, metrics  # ignore_eos forces max_tokens
    assert metrics["Avg TTFT (ms)"] > 0, metrics
    assert run["percentiles"]["Percentiles"][0] == "min" and len(run["percentiles"]["TTFT (ms)"]) == 11
    assert run["workload_throughput"] is not None

# An argparse Namespace (as evalscope's own parser makes) works too: fields llmperf has no flag for are skipped at
# evalscope's defaults.
ns = argparse.Namespace(api="mock", model="smoke-ns", prompt="hi", number=[2], parallel=[1], max_tokens=4,
                        outputs_dir=out, sleep_interval=0, port=8877, sla_variable="parallel", stream=True)
assert list(llmperf.run_perf_benchmark(ns)) == ["parallel_1_number_2"]

# A long sweep prints more than a pipe holds (64 KiB) on stdout while its log goes to stderr: both are read as
# they are written, so the call returns (it used to wait forever on the full stdout pipe).
signal.alarm(300)
sweep = list(range(1, 46))
config = {"api": "mock", "model": "smoke-long", "prompt": "hi", "parallel": sweep, "number": sweep, "max_tokens": 2,
          "mock_ttft_ms": 0, "mock_itl_ms": 0, "outputs_dir": out, "sleep_interval": 0}
real_stdout, captured = sys.stdout, []
sys.stdout = type("Capture", (), {"write": lambda self, text: captured.append(text), "flush": lambda self: None})()
try:
    results = llmperf.run_perf_benchmark(config)
finally:
    sys.stdout = real_stdout
signal.alarm(0)
printed = sum(len(text.encode()) for text in captured)
assert printed > 64 * 1024, f"the sweep printed only {printed} bytes on stdout"
assert len(results) == 45 and results["parallel_45_number_45"]["metrics"]["Total Requests"] == 45
print(f"long sweep: {printed} bytes on stdout, {len(results)} runs")

# No request succeeds (exit code 4): the results come back, as evalscope returns them, with a warning.
failing = {"api": "mock", "model": "smoke-fail", "prompt": "hi", "number": [2], "parallel": [1], "max_tokens": 4,
           "mock_fault": ["http-500"], "no_test_connection": True, "outputs_dir": out, "sleep_interval": 0}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = llmperf.run_perf_benchmark(failing)
assert list(results) == ["parallel_1_number_2"], results
assert results["parallel_1_number_2"]["metrics"]["Failed Requests"] == 2
assert any("no request succeeded" in str(w.message) and "HTTP 500" in str(w.message) for w in caught), [
    str(w.message) for w in caught
]

# llmperf's --repeat, passed as any other field: the result is repeat 1's, in evalscope's shape; the other repeats
# are run roots of their own inside the root (`repeat_2/`), which the reader passes over.
rep = llmperf.run_perf_benchmark({"api": "mock", "model": "smoke-rep", "prompt": "hi", "number": [2], "parallel": [1],
                                  "max_tokens": 4, "outputs_dir": out, "sleep_interval": 0, "repeat": 2})
assert list(rep) == ["parallel_1_number_2"], list(rep)
assert rep["parallel_1_number_2"]["metrics"]["Total Requests"] == 2

try:
    llmperf.run_perf_benchmark({"model": "m", "api": "custom"})
except ValueError as e:
    assert "--query-template" in str(e), e
else:
    raise AssertionError("an unsupported --api must raise ValueError")
print("python package smoke test: ok")
