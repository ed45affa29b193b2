#!/usr/bin/env python3
"""llmperf's bridge to the experiment trackers (`--visualizer wandb|swanlab|clearml`).

llmperf embeds this script, writes it to a temporary file and runs it as
``python3 <script> <wandb|swanlab|clearml>``. It logs what evalscope 1.14.1
logs (``evalscope/perf/utils/log_utils.py``) through the real Python SDK.

Protocol: JSON lines. llmperf writes to our stdin; we answer on our stdout.
The SDKs print to stdout too, so the protocol keeps the original stdout and
everything else printed goes to stderr (llmperf logs it).

  -> us   {"type": "init", "name": str, "config": {...}, "outputs_dir": str}
  -> us   {"type": "log", "data": {metric: number, ...}}         (per request)
  -> us   {"type": "summary", "run": str, "data": {...}}          (per run)
  -> us   {"type": "finish"}                                       (or EOF)
  <- them {"event": "imported"} | {"event": "ready"} | {"event": "finished"}
  <- them {"event": "error", "stage": "import" | "init" | ..., "message": str}

Secrets never travel in messages: the API keys come from the environment
(LLMPERF_WANDB_API_KEY, LLMPERF_SWANLAB_API_KEY); the SwanLab host from
LLMPERF_SWANLAB_HOST. Exit codes: 0 done, 3 the SDK cannot be imported,
4 initialisation failed, 5 a later call failed.
"""

import json
import os
import sys

PROTOCOL = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

INSTALL = {"wandb": "pip install wandb", "swanlab": "pip install swanlab", "clearml": "pip install clearml"}


def say(event, **fields):
    fields["event"] = event
    PROTOCOL.write(json.dumps(fields, ensure_ascii=False) + "\n")
    PROTOCOL.flush()


def fail(stage, message, code):
    say("error", stage=stage, message=message)
    sys.exit(code)


def flatten(prefix, data, out):
    """Numeric leaves of ``data`` as ``prefix/key`` (nested objects joined with '/')."""
    for key, value in data.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, (int, float)):
            out[name] = value
        elif isinstance(value, dict):
            flatten(name, value, out)
    return out


class Wandb:
    def __init__(self):
        import wandb

        self.sdk = wandb
        self.run = None

    def init(self, msg):
        os.environ["WANDB_SILENT"] = "true"
        os.environ["WANDB_DIR"] = msg["outputs_dir"]
        key = os.environ.get("LLMPERF_WANDB_API_KEY")
        if key:
            self.sdk.login(key=key)
        self.run = self.sdk.init(project="perf_benchmark", name=msg["name"], config=msg["config"])

    def log(self, data):
        self.sdk.log(data)

    def summary(self, run, data):
        self.run.summary.update(flatten(run, data, {}))

    def finish(self):
        self.run.finish()


class Swanlab:
    def __init__(self):
        import swanlab

        self.sdk = swanlab

    def init(self, msg):
        os.environ["SWANLAB_LOG_DIR"] = msg["outputs_dir"]
        self.sdk.config.update({"framework": "llmperf"})
        key = os.environ.get("LLMPERF_SWANLAB_API_KEY")
        host = os.environ.get("LLMPERF_SWANLAB_HOST") or os.environ.get("SWANLAB_HOST")
        local = key == "local"
        kwargs = {
            "project": os.environ.get("SWANLAB_PROJ_NAME", "perf_benchmark"),
            "name": msg["name"],
            "config": msg["config"],
            "mode": "local" if local else None,
        }
        if os.environ.get("SWANLAB_WORKSPACE"):
            kwargs["workspace"] = os.environ["SWANLAB_WORKSPACE"]
        if not local and (key is not None or host):
            login = {}
            if key is not None:
                login["api_key"] = key
            if host:
                login["host"] = host
            self.sdk.login(**login)
        self.sdk.init(**kwargs)

    def log(self, data):
        self.sdk.log(data)

    def summary(self, run, data):
        self.sdk.log(flatten(run, data, {}))

    def finish(self):
        self.sdk.finish()


class Clearml:
    def __init__(self):
        from clearml import Task

        self.Task = Task
        self.task = None
        self.step = 0

    def init(self, msg):
        project = os.environ.get("CLEARML_PROJECT_NAME", "perf_benchmark")
        self.task = self.Task.init(
            project_name=project,
            task_name=msg["name"],
            task_type=self.Task.TaskTypes.testing,
            output_uri=msg["outputs_dir"],
        )
        self.task.connect(msg["config"])

    def log(self, data):
        logger = self.task.get_logger()
        for key, value in data.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                logger.report_scalar(title="Performance Metrics", series=key, value=value, iteration=self.step)
        self.step += 1

    def summary(self, run, data):
        logger = self.task.get_logger()
        for name, value in flatten(run, data, {}).items():
            logger.report_single_value(name=name, value=value)

    def finish(self):
        self.task.close()


BACKENDS = {"wandb": Wandb, "swanlab": Swanlab, "clearml": Clearml}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in BACKENDS:
        fail("usage", "usage: llmperf_visualizer_bridge.py wandb|swanlab|clearml", 2)
    kind = sys.argv[1]
    try:
        backend = BACKENDS[kind]()
    except Exception as e:  # ImportError, or a broken install
        fail("import", f"cannot import {kind} ({type(e).__name__}: {e}); install it with: {INSTALL[kind]}", 3)
    say("imported", python=sys.executable)
    started = False
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:
            fail("protocol", f"bad message from llmperf ({e}): {line[:200]}", 5)
        kind_of = msg.get("type")
        if kind_of == "init":
            try:
                backend.init(msg)
            except Exception as e:
                fail("init", f"{type(e).__name__}: {e}", 4)
            started = True
            say("ready")
        elif kind_of == "log":
            try:
                backend.log(msg["data"])
            except Exception as e:
                fail("log", f"{type(e).__name__}: {e}", 5)
        elif kind_of == "summary":
            try:
                backend.summary(msg["run"], msg["data"])
            except Exception as e:
                fail("summary", f"{type(e).__name__}: {e}", 5)
        elif kind_of == "finish":
            break
    if started:
        try:
            backend.finish()
        except Exception as e:
            fail("finish", f"{type(e).__name__}: {e}", 5)
    say("finished")


if __name__ == "__main__":
    main()
