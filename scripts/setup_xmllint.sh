#!/usr/bin/env bash
# Installs xmllint (Debian `libxml2-utils`), which the test of `llmperf compare --junit` uses to validate its
# JUnit XML against tests/fixtures/junit.xsd offline, unless it is already on PATH. Idempotent; needs root
# (or sudo) and apt when it must install.
set -euo pipefail
if command -v xmllint >/dev/null 2>&1; then
  echo "setup_xmllint: found $(command -v xmllint)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends libxml2-utils >/dev/null
command -v xmllint
