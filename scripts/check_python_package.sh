#!/usr/bin/env bash
# The Python package, end to end: builds the wheel with maturin (`bindings = "bin"`: the llmperf binary plus the
# thin `llmperf` module), installs it into a fresh virtual environment, and runs one benchmark sweep through
# `llmperf.run_perf_benchmark` against the built-in simulator (scripts/python_package_smoke.py).
#
#   scripts/check_python_package.sh              # dev-profile wheel (reuses target/debug: fast after cargo test)
#   PROFILE=release scripts/check_python_package.sh
#
# maturin is installed once into .venv-maturin/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-dev}"
if [ ! -x .venv-maturin/bin/maturin ]; then
    python3 -m venv .venv-maturin
    .venv-maturin/bin/pip install -q 'maturin>=1.5,<2'
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv-maturin/bin/maturin build --locked --profile "$profile" -o "$work/wheels"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/wheels/*.whl
"$work/venv/bin/python" scripts/python_package_smoke.py "$work/outputs"
