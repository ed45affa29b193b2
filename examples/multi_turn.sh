#!/usr/bin/env bash
# Multi-turn chat: synthetic conversations of MIN_TURNS..MAX_TURNS user turns, each turn resending the whole
# history with the server's real answers, PARALLEL conversations at a time, THINK_S seconds of user think
# time between turns, one stable X-Session-Id per conversation (for session-affine routers).
#
#   URL=http://127.0.0.1:8000/v1/chat/completions MODEL=qwen3 TOKENIZER=Qwen/Qwen3-0.6B examples/multi_turn.sh
#   MOCK=1 examples/multi_turn.sh                  # the built-in simulator (it caches prefixes across turns)
#
# Settings (environment): LLMPERF, URL, MODEL, TOKENIZER, MIN_TURNS, MAX_TURNS, MIN_INPUT, MAX_INPUT,
# OUTPUT_TOKENS, PARALLEL, CONVERSATIONS, THINK_S, NAME, OUTPUTS_DIR, MOCK (its tokenizer: the shipped SmolLM2
# one unless TOKENIZER is set), EXTRA_ARGS (a JSON object sent as --extra-args), EXTRA_FLAGS.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/recipe_lib.sh"
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:8000/v1/chat/completions}
MODEL=${MODEL:-qwen3}
TOKENIZER=${TOKENIZER:-$(default_tokenizer Qwen/Qwen3-0.6B)}
MIN_TURNS=${MIN_TURNS:-2}
MAX_TURNS=${MAX_TURNS:-6}
MIN_INPUT=${MIN_INPUT:-128}
MAX_INPUT=${MAX_INPUT:-512}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-128}
PARALLEL=${PARALLEL:-4}
CONVERSATIONS=${CONVERSATIONS:-40}
THINK_S=${THINK_S:-0}
NAME=${NAME:-${MODEL}-multi-turn}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}
if [ "${MOCK:-0}" = 1 ]; then endpoint=(--api mock --url "$URL"); else endpoint=(--url "$URL"); fi
# shellcheck disable=SC2086
exec "$LLMPERF" --model "$MODEL" "${endpoint[@]}" --multi-turn --dataset random_multi_turn \
  --tokenizer-path "$TOKENIZER" --min-turns "$MIN_TURNS" --max-turns "$MAX_TURNS" \
  --min-prompt-length "$MIN_INPUT" --max-prompt-length "$MAX_INPUT" --max-tokens "$OUTPUT_TOKENS" \
  --parallel "$PARALLEL" --number "$CONVERSATIONS" --session-header X-Session-Id \
  --dataset-args "{\"think_time_s\": $THINK_S}" --extra-args "$(merge_extra_args '{}')" \
  --name "$NAME" --outputs-dir "$OUTPUTS_DIR" ${EXTRA_FLAGS:-}
