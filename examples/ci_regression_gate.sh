#!/usr/bin/env bash
# CI regression gate: benchmark the baseline and the candidate with the same settings, then let
# `llmperf compare --fail-on` decide. Exit 0: no gated regression; 3: a gated regression (fail the job);
# anything else: a benchmark or the comparison could not run. The comparison is printed (Markdown, ready
# for a pull-request comment) and kept with a JUnit report for the CI's test view.
#
#   BASE_URL=http://baseline:8000/v1/chat/completions NEW_URL=http://candidate:8000/v1/chat/completions \
#     MODEL=qwen3.5-4b examples/ci_regression_gate.sh
#   NEW_TTFT_MS=130 examples/ci_regression_gate.sh     # a demo on the built-in simulator: a 30 % slower TTFT
#
# Without BASE_URL/NEW_URL both sides are the built-in simulator (TTFT BASE_TTFT_MS / NEW_TTFT_MS, log-normal
# noise CV 0.2), so the gate can be tried anywhere. The defaults follow docs/compare.md: 1,500 requests per
# run let `p99_ttft:+10%` catch a +25 % slowdown in ≥ 95 % of comparisons.
#
# Settings (environment): LLMPERF, BASE_URL, NEW_URL, MODEL, PROMPT, MAX_TOKENS, PARALLEL, NUMBER, REPEAT,
# GATES (space-separated --fail-on values), BASE_TTFT_MS, NEW_TTFT_MS, OUTPUTS_DIR, EXTRA_FLAGS (appended
# verbatim to both runs, e.g. "--sleep-interval 0").
set -uo pipefail
LLMPERF=${LLMPERF:-llmperf}
MODEL=${MODEL:-qwen3.5-4b}
PROMPT=${PROMPT:-Write a short story about a lighthouse keeper.}
MAX_TOKENS=${MAX_TOKENS:-64}
PARALLEL=${PARALLEL:-16}
NUMBER=${NUMBER:-1500}
REPEAT=${REPEAT:-1}
GATES=${GATES:-p99_ttft:+10% avg_ttft:+10% avg_tpot:+10%}
BASE_TTFT_MS=${BASE_TTFT_MS:-100}
NEW_TTFT_MS=${NEW_TTFT_MS:-100}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs/ci-gate}

# One side: a server when its URL is given, else the simulator with that TTFT (and its own seed).
bench() {
  local name=$1 url=$2 ttft_ms=$3 seed=$4 target
  if [ -n "$url" ]; then
    target=(--url "$url" --model "$MODEL")
  else
    target=(--api mock --model "$MODEL" --mock-ttft-ms "$ttft_ms" --mock-itl-ms 5 --mock-jitter-cv 0.2 --seed "$seed")
  fi
  # shellcheck disable=SC2086
  "$LLMPERF" "${target[@]}" --prompt "$PROMPT" --max-tokens "$MAX_TOKENS" --stream \
    --parallel "$PARALLEL" --number "$NUMBER" --repeat "$REPEAT" \
    --name "$name" --no-timestamp --outputs-dir "$OUTPUTS_DIR" ${EXTRA_FLAGS:-} >/dev/null
}

if [ -e "$OUTPUTS_DIR/baseline" ] || [ -e "$OUTPUTS_DIR/candidate" ]; then
  echo "ci_regression_gate: $OUTPUTS_DIR already holds a baseline or candidate: choose another OUTPUTS_DIR" >&2
  exit 2
fi
bench baseline "${BASE_URL:-}" "$BASE_TTFT_MS" 1 || { echo "ci_regression_gate: the baseline run failed" >&2; exit 1; }
bench candidate "${NEW_URL:-}" "$NEW_TTFT_MS" 2 || { echo "ci_regression_gate: the candidate run failed" >&2; exit 1; }

fail_on=()
for gate in $GATES; do fail_on+=(--fail-on "$gate"); done
"$LLMPERF" compare "$OUTPUTS_DIR/baseline" "$OUTPUTS_DIR/candidate" "${fail_on[@]}" \
  --format markdown --output "$OUTPUTS_DIR/comparison.md" --junit "$OUTPUTS_DIR/junit.xml"
code=$?
[ -f "$OUTPUTS_DIR/comparison.md" ] && cat "$OUTPUTS_DIR/comparison.md"
case $code in
  0) echo "ci_regression_gate: no gated regression" ;;
  3) echo "ci_regression_gate: REGRESSION (see the gates above; $OUTPUTS_DIR/junit.xml)" ;;
  *) echo "ci_regression_gate: the comparison could not run (exit $code)" >&2 ;;
esac
exit $code
