"""Runs one benchmark sweep through the installed wheel's `llmperf.run_perf_benchmark` against the built-in
simulator (`api: mock`) and checks evalscope's result shape; called by scripts/check_python_package.sh with an
outputs folder."""

import argparse
import os
import sys

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
