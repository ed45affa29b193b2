"""llmperf from Python: the `llmperf` binary (installed on PATH by this wheel) behind evalscope's
`run_perf_benchmark(config)`, so notebook code switches by changing one import:

    from llmperf import run_perf_benchmark          # was: from evalscope.perf.main import run_perf_benchmark

    results = run_perf_benchmark({
        "url": "http://127.0.0.1:8000/v1/chat/completions",
        "model": "qwen3",
        "parallel": [1, 4],
        "number": [20, 40],
        "max_tokens": 128,
        "prompt": "Write a story",
    })
    results["parallel_4_number_40"]["metrics"]["Avg TTFT (ms)"]

`config` is evalscope's argument set: a dict keyed by its field names, or an object with those attributes
(an evalscope `Arguments`, an `argparse.Namespace`). The result has evalscope's shape, with plain values:
`{"parallel_<P>_number_<N>" (or "rate_<R>_number_<N>"): {"metrics": <benchmark_summary.json>, "percentiles":
<benchmark_percentile.json as {column: [values]}>, "trace_summary": None, "workload_throughput":
<workload_throughput.json or None>}}`.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from typing import IO, Any, Dict, List, Optional

__all__ = ["run_perf_benchmark", "to_argv", "llmperf_binary"]

# Fields of evalscope's Arguments that are not flags (derived, or evalscope-internal).
_NOT_FLAGS = {"model_id"}
# evalscope fields llmperf has no flag for, skipped at their evalscope default (an `Arguments` object or an
# argparse `Namespace` carries every field); any other value is passed on, and llmperf names the flag it
# rejects.
_SKIPPED_AT_DEFAULT = {
    "port": 8877,
    "attn_implementation": None,
    "scenario": None,
    "sla_auto_tune": False,
    "sla_variable": "parallel",
    "sla_params": None,
    "sla_num_runs": 3,
    "sla_upper_bound": 65536,
    "sla_lower_bound": 1,
    "sla_fixed_parallel": None,
    "sla_number_multiplier": None,
    "multi_turn": False,
    "min_turns": 1,
    "max_turns": None,
    "multi_turn_args": None,
}
# Boolean fields with a --no- form: False must be passed explicitly.
_NEGATABLE = {"stream", "apply_chat_template"}
# Fields whose dict value is passed as JSON.
_JSON_FIELDS = {"extra_args", "dataset_args", "sla_params", "multi_turn_args"}
# llmperf's exit code when no request of the whole invocation succeeded (its files are written as usual).
EXIT_NOTHING_SUCCEEDED = 4


def _fields(config: Any) -> Dict[str, Any]:
    if isinstance(config, dict):
        return dict(config)
    if hasattr(config, "model_dump"):  # evalscope's pydantic Arguments
        return config.model_dump()
    return {k: v for k, v in vars(config).items() if not k.startswith("_")}


def _secret(value: Any) -> Any:
    """The plain value of a pydantic SecretStr (evalscope keeps keys and auth headers as those)."""
    getter = getattr(value, "get_secret_value", None)
    return getter() if callable(getter) else value


def to_argv(config: Any) -> List[str]:
    """The llmperf command-line arguments for an evalscope config (dict or Arguments-like object)."""
    argv: List[str] = []
    for key, value in _fields(config).items():
        value = _secret(value)
        if key in _NOT_FLAGS or value is None:
            continue
        if key in _SKIPPED_AT_DEFAULT and value == _SKIPPED_AT_DEFAULT[key]:
            continue
        flag = "--" + key.replace("_", "-")
        if key in _NEGATABLE:
            argv.append(flag if value else "--no-" + key.replace("_", "-"))
        elif isinstance(value, bool):
            if value:
                argv.append(flag)
        elif key == "headers":
            if value:
                argv.append(flag)
                argv.extend(f"{k}={_secret(v)}" for k, v in value.items())
        elif key in _JSON_FIELDS or isinstance(value, dict):
            argv.extend([flag, json.dumps(value, ensure_ascii=False)])
        elif isinstance(value, (list, tuple)):
            if value:
                argv.append(flag)
                argv.extend(str(v) for v in value)
        else:
            argv.extend([flag, str(value)])
    return argv


def llmperf_binary() -> str:
    """The `llmperf` executable: `$LLMPERF_BIN`, the one beside this Python, or the one on PATH."""
    explicit = os.environ.get("LLMPERF_BIN")
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(sys.executable), "llmperf")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("llmperf")
    if found:
        return found
    raise FileNotFoundError("the llmperf binary was not found: pip install the llmperf wheel, or set LLMPERF_BIN")


def _read_json(path: str) -> Optional[Any]:
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)  # NaN is valid for Python's json module, as evalscope writes it


def _percentiles_by_column(rows: Optional[List[Dict[str, Any]]]) -> Optional[Dict[str, List[Any]]]:
    if rows is None:
        return None
    columns: Dict[str, List[Any]] = {}
    for row in rows:
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    return columns


def _echo(stream: IO[str], sink: IO[str], lines: Optional[List[str]] = None) -> None:
    """Copies `stream` to `sink` line by line as it is written (keeping the lines when asked)."""
    for line in stream:
        sink.write(line)
        if lines is not None:
            lines.append(line)


def run_perf_benchmark(config: Any) -> Dict[str, Dict[str, Any]]:
    """Runs llmperf with evalscope's `config` and returns evalscope's result shape (see the module docs).

    Raises ValueError for a config llmperf rejects (its exit code 2, with its message) and RuntimeError when
    the run fails; the log goes to stderr and the report to stdout as they are written. A sweep in which no
    request succeeded (exit code 4) returns its results, as evalscope does, with a warning.
    """
    cmd = [llmperf_binary()] + to_argv(config)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    assert proc.stdout is not None and proc.stderr is not None
    # Both pipes are drained at once: a child blocked on a full stdout pipe would never close stderr.
    out_thread = threading.Thread(target=_echo, args=(proc.stdout, sys.stdout), daemon=True)
    out_thread.start()
    lines: List[str] = []
    _echo(proc.stderr, sys.stderr, lines)
    out_thread.join()
    proc.wait()
    marker = "Save the result to: "
    root = next((line.split(marker, 1)[1].strip() for line in lines if marker in line), None)
    if proc.returncode == 2:
        raise ValueError("".join(lines[-20:]).strip() or "llmperf rejected the configuration")
    if proc.returncode not in (0, EXIT_NOTHING_SUCCEEDED) or root is None:
        raise RuntimeError(f"llmperf failed (exit code {proc.returncode}): " + "".join(lines[-20:]).strip())
    if proc.returncode == EXIT_NOTHING_SUCCEEDED:
        errors = [line.strip() for line in lines if " - ERROR: " in line]
        warnings.warn("llmperf: no request succeeded. " + " ".join(errors[:3]), RuntimeWarning, stacklevel=2)
    results: Dict[str, Dict[str, Any]] = {}
    for name in sorted(os.listdir(root)):
        run_dir = os.path.join(root, name)
        summary = _read_json(os.path.join(run_dir, "benchmark_summary.json"))
        if not os.path.isdir(run_dir) or summary is None:
            continue
        results[name] = {
            "metrics": summary,
            "percentiles": _percentiles_by_column(_read_json(os.path.join(run_dir, "benchmark_percentile.json"))),
            "trace_summary": None,
            "workload_throughput": _read_json(os.path.join(run_dir, "workload_throughput.json")),
        }
    return results
