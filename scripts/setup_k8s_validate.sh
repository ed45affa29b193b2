#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI, pinned) into .venv-k8s, for the offline validation of
# examples/k8s-indexed-job.yaml against the published schemas of a pinned Kubernetes version (tests/cli/kubernetes.rs).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.37.0
# (sed reads pip's whole output: `grep -q` would stop early, and pip's SIGPIPE fails the pipe under pipefail)
if [ -x .venv-k8s/bin/kubernetes-validate ] && [ "$(.venv-k8s/bin/pip show kubernetes-validate 2>/dev/null | sed -n 's/^Version: //p')" = "$VERSION" ]; then
  exit 0
fi
python3 -m venv .venv-k8s
.venv-k8s/bin/pip install -q "kubernetes-validate==$VERSION"
