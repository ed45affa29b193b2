#!/usr/bin/env bash
# Fuzzes the SSE framer, the event parser, the HTTP/1.1 response decoder and the request-body composer (the proptest targets in
# tests/fuzz) for a time budget per target, in release mode, and prints how many inputs each executed.
# The composed bodies are then checked against Python: json.dumps(json.loads(body), ensure_ascii=False)
# must give the body back byte for byte (skipped when python3 is missing).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30; eight targets run one after another)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "Fuzzing each target for ${secs} s (release build)..."
LLMPERF_FUZZ_SECONDS="$secs" LLMPERF_FUZZ_DUMP_DIR="$work" \
  cargo test --release --locked --test fuzz -- --nocapture --test-threads 1 >"$work/log" 2>&1 || {
  cat "$work/log"
  exit 1
}
# cargo prints "test <name> ... " without a newline before a test's own output.
grep -oE 'fuzz [a-z0-9_]+: [0-9]+ executions in [0-9.]+ s' "$work/log" >"$work/counts"
cat "$work/counts"
grep -E '^test result' "$work/log"
awk '{ total += $3 } END { printf "total: %d executions, no failure\n", total }' "$work/counts"

if command -v python3 >/dev/null 2>&1 && [ -s "$work/bodies.jsonl" ]; then
  python3 - "$work/bodies.jsonl" <<'PY'
import json, sys
n = bad = 0
with open(sys.argv[1], encoding="utf-8", newline="\n") as f:
    for line in f:
        line = line[:-1]
        n += 1
        if json.dumps(json.loads(line), ensure_ascii=False) != line:
            bad += 1
            if bad <= 3:
                print("differs from Python:", line[:300])
print(f"python cross-check: {n} bodies, {bad} differ from json.dumps")
sys.exit(1 if bad else 0)
PY
fi
