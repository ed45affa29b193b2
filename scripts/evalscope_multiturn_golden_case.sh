#!/bin/bash
# Makes one golden case for tests/fixtures/evalscope-golden/: runs the real `evalscope perf` (from $EVALSCOPE,
# default /work/evenv/bin/evalscope) against llmperf's simulator with its prefix cache on, in its own process
# (build it first: cargo build --example truth).
#
# usage: scripts/evalscope_multiturn_golden_case.sh CASE [INPUT_FILE...] -- EVALSCOPE_PERF_ARGS...
#   PORT in the arguments is replaced by the simulator's port; input files are copied next to the run.
# The case lands in $WORK/out_CASE (default WORK=/tmp/llmperf-mt-gold); copy outputs/, command.txt and
# console.txt from there, rewriting absolute paths to relative ones.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/llmperf-mt-gold}
evalscope=${EVALSCOPE:-/work/evenv/bin/evalscope}
case_name=$1; shift
inputs=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do inputs+=("$(realpath "$1")"); shift; done
shift
out="$work/out_$case_name"
rm -rf "$out"; mkdir -p "$out"
ln -sfn "$repo/../shared/tokenizers" "$out/tokenizers"
for f in "${inputs[@]}"; do cp "$f" "$out/"; done
fifo="$work/fifo_$case_name"; rm -f "$fifo"; mkfifo "$fifo"
"$repo/target/debug/examples/truth" serve-sim --ttft-ms 50 --itl-ms 10 --tokens 64 --threads 1 --prefix-cache \
  < "$fifo" > "$work/sim_$case_name.txt" 2>&1 &
exec 7>"$fifo"
for _ in $(seq 100); do [ -s "$work/sim_$case_name.txt" ] && break; sleep 0.1; done
port=$(head -1 "$work/sim_$case_name.txt" | cut -d' ' -f1)
args=("$@"); args=("${args[@]//PORT/$port}")
echo "evalscope perf ${args[*]}" > "$out/command.txt"
echo "simulator: cargo run --example truth -- serve-sim --ttft-ms 50 --itl-ms 10 --tokens 64 --threads 1 --prefix-cache" >> "$out/command.txt"
(cd "$out" && "$evalscope" perf "${args[@]}" > console.txt 2>&1; echo "rc=$?" >> command.txt)
exec 7>&-
wait
rm -f "$fifo" "$out/tokenizers"
