#!/usr/bin/env bash
# Production-trace replay: every request of a JSONL trace ({"body": {...}, "timestamp": 1717000000.25 or
# "2024-05-29T16:26:40.250Z", optional "headers", "request_id", "completion_tokens"}) sent at its recorded
# offset, SPEED times faster, with the recorded output lengths forced (match_output_length; the server must
# honour ignore_eos, as vLLM does). The send lag (actual − recorded send time) is in the summary.
#
#   URL=http://127.0.0.1:8000/v1/chat/completions TRACE=prod-trace.jsonl examples/trace_replay.sh
#   MOCK=1 TRACE=prod-trace.jsonl examples/trace_replay.sh      # the built-in simulator
#
# Settings (environment): LLMPERF, URL, TRACE (required), SPEED, MODEL (optional: rewrites every body's
# model), NAME, OUTPUTS_DIR, MOCK, EXTRA_ARGS (a JSON object sent as --extra-args), EXTRA_FLAGS.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/recipe_lib.sh"
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:8000/v1/chat/completions}
SPEED=${SPEED:-1.0}
NAME=${NAME:-trace-replay}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}
if [ -z "${TRACE:-}" ]; then
  echo "error: set TRACE to the JSONL trace file" >&2
  exit 2
fi
args="{\"speed\": $SPEED, \"match_output_length\": true"
if [ -n "${MODEL:-}" ]; then args="$args, \"model_override\": \"$MODEL\""; fi
args="$args}"
if [ "${MOCK:-0}" = 1 ]; then endpoint=(--api mock --url "$URL"); else endpoint=(--url "$URL"); fi
# shellcheck disable=SC2086
exec "$LLMPERF" "${endpoint[@]}" --open-loop --dataset workload_trace --dataset-path "$TRACE" \
  --dataset-args "$args" --extra-args "$(merge_extra_args '{}')" --name "$NAME" --outputs-dir "$OUTPUTS_DIR" \
  ${EXTRA_FLAGS:-}
