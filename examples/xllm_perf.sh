#!/usr/bin/env bash
# Seed recipe (b): the xLLM performance script — exact token-id prompts on /v1/completions
# (TOKENIZE_PROMPT=true) or templated chat prompts, an optional shared prefix, and a concurrency sweep
# 1/4/8 × 64/128/256 requests with 8 warmup requests. VLM=1 runs the flickr8k image variant instead
# (DATASET_PATH = a local copy of the hub dataset).
#
#   URL=http://127.0.0.1:18000/v1/chat/completions INPUT_TOKENS=512 OUTPUT_TOKENS=128 PREFIX_TOKENS=512 \
#     TOKENIZE_PROMPT=true examples/xllm_perf.sh
#   MOCK=1 examples/xllm_perf.sh              # the built-in simulator instead of a server
#
# Settings (environment): LLMPERF, URL, MODEL, TOKENIZER (MOCK=1: the shipped SmolLM2 one), INPUT_TOKENS,
# OUTPUT_TOKENS, PREFIX_TOKENS, TOKENIZE_PROMPT, PARALLELS, NUMBERS, WARMUP, VLM, DATASET_PATH, OUTPUTS_DIR,
# MOCK, EXTRA_ARGS (a JSON object merged into the recipe's --extra-args), EXTRA_FLAGS.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/recipe_lib.sh"
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:18000/v1/chat/completions}
MODEL=${MODEL:-Qwen3.5-4B}
TOKENIZER=${TOKENIZER:-$(default_tokenizer Qwen/Qwen3.5-4B)}
INPUT_TOKENS=${INPUT_TOKENS:-512}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-128}
PREFIX_TOKENS=${PREFIX_TOKENS:-0}
TOKENIZE_PROMPT=${TOKENIZE_PROMPT:-false}
PARALLELS=${PARALLELS:-1 4 8}
NUMBERS=${NUMBERS:-64 128 256}
WARMUP=${WARMUP:-8}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}

die() { echo "xllm_perf.sh: $*" >&2; exit 2; }
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"; }
positive INPUT_TOKENS "$INPUT_TOKENS"
positive OUTPUT_TOKENS "$OUTPUT_TOKENS"
[[ "$PREFIX_TOKENS" =~ ^[0-9]+$ ]] || die "PREFIX_TOKENS must be a non-negative integer, got '$PREFIX_TOKENS'"
case "$TOKENIZE_PROMPT" in true|false) ;; *) die "TOKENIZE_PROMPT must be true or false, got '$TOKENIZE_PROMPT'";; esac
read -r -a parallels <<<"$PARALLELS"
read -r -a numbers <<<"$NUMBERS"
[ "${#parallels[@]}" -eq "${#numbers[@]}" ] || die "PARALLELS and NUMBERS must have the same length"

if [ "${MOCK:-0}" = 1 ]; then endpoint=(--api mock --url "$URL"); else endpoint=(--api openai --url "$URL"); fi
common=(--model "$MODEL" "${endpoint[@]}" --tokenizer-path "$TOKENIZER" --max-tokens "$OUTPUT_TOKENS"
  --min-tokens "$OUTPUT_TOKENS" --temperature 0 --seed 42 --parallel "${parallels[@]}" --number "${numbers[@]}"
  --warmup-num "$WARMUP" --stream --outputs-dir "$OUTPUTS_DIR")
if [ "${VLM:-0}" = 1 ]; then
  [ -n "${DATASET_PATH:-}" ] || die "VLM=1 needs DATASET_PATH (a local copy of clip-benchmark/wds_flickr8k)"
  data=(--dataset flickr8k --dataset-path "$DATASET_PATH" --name "${MODEL}-flickr8k-${OUTPUT_TOKENS}")
else
  data=(--dataset random --min-prompt-length "$INPUT_TOKENS" --max-prompt-length "$INPUT_TOKENS"
    --prefix-length "$PREFIX_TOKENS" --name "${MODEL}-${PREFIX_TOKENS}p-${INPUT_TOKENS}-${OUTPUT_TOKENS}")
  if [ "$TOKENIZE_PROMPT" = true ]; then data+=(--tokenize-prompt); fi
fi
# shellcheck disable=SC2086
exec "$LLMPERF" "${common[@]}" "${data[@]}" --extra-args "$(merge_extra_args '{"ignore_eos": true}')" ${EXTRA_FLAGS:-}
