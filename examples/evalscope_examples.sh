#!/usr/bin/env bash
# Seed recipe (c): the `evalscope perf` examples page, one function per example, with llmperf.
#
#   URL=http://127.0.0.1:8000/v1 examples/evalscope_examples.sh all        # every example
#   examples/evalscope_examples.sh random open_loop                        # some of them
#   MOCK=1 examples/evalscope_examples.sh prompt                          # the built-in simulator
#
# Settings (environment): LLMPERF, URL (the server's /v1 base), MODEL, EMBED_MODEL, RERANK_MODEL, TOKENIZER
# (MOCK=1: the shipped SmolLM2 one), NUMBER, OUTPUTS_DIR, MOCK (chat examples only), EXTRA_ARGS (a JSON object
# merged into each example's --extra-args, e.g. '{"cache_prompt": false}'), EXTRA_FLAGS.
#
# Every example asked for runs, even after one fails; the script then exits 1 naming the failed ones (an
# llmperf run fails when it cannot run, or when none of its requests succeeded: exit 4).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/recipe_lib.sh"
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:8000/v1}
MODEL=${MODEL:-qwen2.5}
EMBED_MODEL=${EMBED_MODEL:-bge-m3}
RERANK_MODEL=${RERANK_MODEL:-bge-reranker}
TOKENIZER=${TOKENIZER:-$(default_tokenizer Qwen/Qwen2.5-0.5B-Instruct)}
NUMBER=${NUMBER:-20}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}

# A chat example: $1 is its own --extra-args object (EXTRA_ARGS merged in), the rest its flags.
run() {
  local extra=$1
  shift
  local endpoint=(--url "$URL")
  if [ "${MOCK:-0}" = 1 ]; then endpoint=(--api mock --url "$URL"); fi
  # shellcheck disable=SC2086
  "$LLMPERF" "${endpoint[@]}" --outputs-dir "$OUTPUTS_DIR" --extra-args "$(merge_extra_args "$extra")" ${EXTRA_FLAGS:-} "$@"
}

# A fixed prompt, two concurrency levels.
prompt() { run '{}' --model "$MODEL" --prompt 'Write a short story about a lighthouse' --parallel 1 2 --number "$NUMBER" "$NUMBER" --max-tokens 64 --name prompt; }
# A request body template: the dataset's messages go into `messages`, %m becomes the model name.
query_template() { run '{}' --model "$MODEL" --prompt 'Say hello' --number "$NUMBER" --max-tokens 32 --name query_template \
  --query-template '{"model": "%m", "messages": [], "stream": true, "stream_options": {"include_usage": true}, "top_p": 0.9}'; }
# Random prompts of exact token lengths.
random() { run '{"ignore_eos": true}' --model "$MODEL" --dataset random --tokenizer-path "$TOKENIZER" --min-prompt-length 128 \
  --max-prompt-length 256 --max-tokens 64 --number "$NUMBER" --parallel 2 --name random; }
# Random prompts with random images (vision-language models).
random_vl() { run '{}' --model "$MODEL" --dataset random_vl --tokenizer-path "$TOKENIZER" --min-prompt-length 64 --max-prompt-length 64 \
  --image-width 256 --image-height 256 --image-num 1 --max-tokens 32 --number "$NUMBER" --name random_vl; }
# Embeddings with random inputs.
embedding() { "$LLMPERF" --url "$URL" --outputs-dir "$OUTPUTS_DIR" --extra-args "$(merge_extra_args '{}')" ${EXTRA_FLAGS:-} \
  --api openai_embedding --model "$EMBED_MODEL" --dataset random_embedding --tokenizer-path "$TOKENIZER" --min-prompt-length 64 \
  --max-prompt-length 128 --parallel 2 --number "$NUMBER" --name embedding; }
# Reranking with random queries and documents.
rerank() { "$LLMPERF" --url "$URL" --outputs-dir "$OUTPUTS_DIR" ${EXTRA_FLAGS:-} --api openai_rerank --model "$RERANK_MODEL" \
  --dataset random_rerank --tokenizer-path "$TOKENIZER" --min-prompt-length 32 --max-prompt-length 32 --parallel 2 \
  --number "$NUMBER" --extra-args "$(merge_extra_args '{"num_documents": 5, "document_length_ratio": 3}')" --name rerank; }
# Open loop: Poisson arrivals at two rates.
open_loop() { run '{}' --model "$MODEL" --prompt 'Say hello' --open-loop --rate 5 10 --number "$NUMBER" "$NUMBER" --max-tokens 16 --name open_loop; }
# Debug logging of request starts and response chunks.
debug() { run '{}' --model "$MODEL" --prompt 'Say hello' --number 2 --max-tokens 8 --debug --name debug; }

all=(prompt query_template random random_vl embedding rerank open_loop debug)
[ $# -gt 0 ] || { echo "usage: $0 all | ${all[*]}" >&2; exit 2; }
[ "$1" = all ] && set -- "${all[@]}"
for example in "$@"; do
  case " ${all[*]} " in *" $example "*) ;; *) echo "unknown example '$example' (choose from: ${all[*]})" >&2; exit 2;; esac
done
failed=()
for example in "$@"; do
  echo "== $example" >&2
  "$example" || failed+=("$example (exit $?)")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "evalscope_examples.sh: ${#failed[@]} of $# examples failed: ${failed[*]}" >&2
  exit 1
fi
