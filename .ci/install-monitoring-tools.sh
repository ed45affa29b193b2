#!/usr/bin/env bash
# Installs Debian's `tmux` (the terminal the dashboard test drives, tests/cli/dashboard.rs) and
# `prometheus` (the server and `promtool` the metrics-endpoint test starts and runs,
# tests/cli/live_metrics.rs), unless they are already on PATH. Idempotent; needs root (or sudo) and apt
# when it must install. The package's own service is not needed: the test starts Prometheus itself.
set -euo pipefail
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing+=(prometheus)
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-monitoring-tools: found $(command -v tmux) and $(command -v prometheus)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v tmux prometheus promtool
