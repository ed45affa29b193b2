# Shared by the recipes in this folder (sourced, not run): the MOCK=1 tokenizer and EXTRA_ARGS.
#
# MOCK=1 runs a recipe on the built-in simulator; its tokenizer is then, unless TOKENIZER is set, the
# SmolLM2-135M-Instruct tokenizer shipped in tokenizers/ (Apache-2.0), so it runs offline.
# EXTRA_ARGS is a JSON object merged into the recipe's own --extra-args (its keys win), e.g.
# EXTRA_ARGS='{"cache_prompt": false}' for llama.cpp keeps the recipe's {"ignore_eos": true}.

RECIPES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The tokenizer to use when TOKENIZER is not set: $1 against a real server, the shipped one with MOCK=1.
default_tokenizer() {
  if [ "${MOCK:-0}" = 1 ]; then
    printf '%s' "$RECIPES_DIR/tokenizers/smollm2-135m-instruct"
  else
    printf '%s' "$1"
  fi
}

# The JSON object $1 with the keys of EXTRA_ARGS added after its own (a key in both: EXTRA_ARGS wins, as
# the last of two equal keys does in JSON).
merge_extra_args() {
  local base extra
  base=$(printf '%s' "$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  extra=$(printf '%s' "${EXTRA_ARGS:-}" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  case "$extra" in
    '' | '{}') printf '%s' "$base"; return ;;
    '{'*'}') ;;
    *) echo "EXTRA_ARGS must be a JSON object, got: $extra" >&2; exit 2 ;;
  esac
  case "$base" in
    '' | '{}') printf '%s' "$extra" ;;
    *) printf '%s, %s' "${base%\}}" "${extra#\{}" ;;
  esac
}

# A malformed EXTRA_ARGS stops the recipe here, before anything runs (merge_extra_args runs in a subshell).
case "$(printf '%s' "${EXTRA_ARGS:-}" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')" in
  '' | '{'*'}') ;;
  *) echo "EXTRA_ARGS must be a JSON object, got: ${EXTRA_ARGS}" >&2; exit 2 ;;
esac
