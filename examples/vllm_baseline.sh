#!/usr/bin/env bash
# Seed recipe (a): the vLLM Qwen3.5-4B baseline — random 512-token prompts, 128 output tokens forced with
# ignore_eos, concurrency 1, 5 warmup requests, 100 measured requests, thinking off.
# Start vLLM with prefix caching off:  vllm serve Qwen/Qwen3.5-4B --port 8000 --no-enable-prefix-caching
#
#   URL=http://127.0.0.1:8000/v1/chat/completions examples/vllm_baseline.sh
#   MOCK=1 examples/vllm_baseline.sh          # the built-in simulator instead of a server
#
# Settings (environment): LLMPERF, URL, MODEL, TOKENIZER (MOCK=1: the shipped SmolLM2 one), INPUT_TOKENS,
# OUTPUT_TOKENS, NUMBER, WARMUP, NAME, OUTPUTS_DIR, MOCK, EXTRA_ARGS (a JSON object merged into the recipe's
# --extra-args, e.g. '{"cache_prompt": false}'), EXTRA_FLAGS (appended verbatim, e.g. "--sleep-interval 0").
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/recipe_lib.sh"
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:8000/v1/chat/completions}
MODEL=${MODEL:-qwen3.5-4b}
TOKENIZER=${TOKENIZER:-$(default_tokenizer Qwen/Qwen3.5-4B)}
INPUT_TOKENS=${INPUT_TOKENS:-512}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-128}
NUMBER=${NUMBER:-100}
WARMUP=${WARMUP:-5}
NAME=${NAME:-${MODEL}-a10-c1-${INPUT_TOKENS}-${OUTPUT_TOKENS}}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}
if [ "${MOCK:-0}" = 1 ]; then endpoint=(--api mock --url "$URL"); else endpoint=(--api openai --url "$URL"); fi
# shellcheck disable=SC2086
exec "$LLMPERF" --model "$MODEL" "${endpoint[@]}" --dataset random --tokenizer-path "$TOKENIZER" \
  --min-prompt-length "$INPUT_TOKENS" --max-prompt-length "$INPUT_TOKENS" --prefix-length 0 \
  --min-tokens "$OUTPUT_TOKENS" --max-tokens "$OUTPUT_TOKENS" --temperature 0 --seed 42 --parallel 1 \
  --number "$NUMBER" --warmup-num "$WARMUP" --stream \
  --extra-args "$(merge_extra_args '{"ignore_eos": true, "chat_template_kwargs": {"enable_thinking": false}}')" \
  --name "$NAME" --outputs-dir "$OUTPUTS_DIR" ${EXTRA_FLAGS:-}
