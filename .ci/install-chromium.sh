#!/usr/bin/env bash
# Installs the Debian `chromium` package for the browser test of perf_report.html (tests/cli/report.rs),
# unless a Chromium is already on PATH. Idempotent; needs root (or sudo) and apt when it must install.
set -euo pipefail
for bin in chromium chromium-browser google-chrome; do
  if command -v "$bin" >/dev/null 2>&1; then
    echo "install-chromium: found $(command -v "$bin")"
    exit 0
  fi
done
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
command -v chromium
