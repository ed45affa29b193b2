#!/usr/bin/env bash
# Tool-calling benchmark: chat requests that offer a function (and every fourth one that asks for JSON
# through response_format instead: the request bodies of examples/tool_calling_rows.jsonl, one per line),
# streamed, at PARALLEL concurrency. Besides evalscope's latency keys the summary reports Tool Call Rate
# (%), Valid Tool Calls (%), Schema Valid (%), Truncated (%) and the time to the first tool call;
# benchmark_data.db has the reassembled calls and why each invalid one failed.
# Start the server with tool calling on: vLLM `--enable-auto-tool-choice --tool-call-parser hermes` (or the
# parser of your model), SGLang `--tool-call-parser qwen25`, llama.cpp `--jinja`. See docs/tool-calling.md.
#
#   URL=http://127.0.0.1:8000/v1/chat/completions MODEL=qwen3 examples/tool_calling.sh
#   BFCL=/data/BFCL_v3_simple.json examples/tool_calling.sh   # BFCL's own question file instead of the rows file
#   MOCK=1 INVALID_RATE=0.2 examples/tool_calling.sh           # the built-in simulator, a fifth of its calls invalid
#
# Settings (environment): LLMPERF, URL, MODEL, PARALLEL, NUMBER, MAX_TOKENS, ROWS (a line_by_line file of
# request bodies), BFCL, NAME, OUTPUTS_DIR, MOCK, INVALID_RATE (simulator only), EXTRA_FLAGS (appended
# verbatim, e.g. "--tokenizer-path Qwen/Qwen3-8B" to count the arguments' tokens).
set -euo pipefail
LLMPERF=${LLMPERF:-llmperf}
URL=${URL:-http://127.0.0.1:8000/v1/chat/completions}
MODEL=${MODEL:-qwen3}
PARALLEL=${PARALLEL:-4}
NUMBER=${NUMBER:-100}
MAX_TOKENS=${MAX_TOKENS:-512}
NAME=${NAME:-${MODEL}-tool-calling}
ROWS=${ROWS:-$(cd "$(dirname "$0")" && pwd)/tool_calling_rows.jsonl}
OUTPUTS_DIR=${OUTPUTS_DIR:-./outputs}
if [ "${MOCK:-0}" = 1 ]; then
  endpoint=(--api mock --url "$URL" --mock-invalid-output-rate "${INVALID_RATE:-0}")
else
  endpoint=(--api openai --url "$URL")
fi
if [ -n "${BFCL:-}" ]; then
  dataset=(--dataset bfcl --dataset-path "$BFCL")
else
  dataset=(--dataset line_by_line --dataset-path "$ROWS")
fi
# shellcheck disable=SC2086
exec "$LLMPERF" --model "$MODEL" "${endpoint[@]}" "${dataset[@]}" --parallel "$PARALLEL" --number "$NUMBER" \
  --max-tokens "$MAX_TOKENS" --temperature 0 --stream --name "$NAME" --outputs-dir "$OUTPUTS_DIR" ${EXTRA_FLAGS:-}
