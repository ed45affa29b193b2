#!/bin/bash
# usage: run_case.sh CASE -- evalscope args (use PORT placeholder)
set -u
case_name=$1; shift; shift
cd /tmp/gold
rm -rf "out_$case_name"; mkdir -p "out_$case_name"
mkfifo /tmp/gold/fifo_$case_name 2>/dev/null
( /work/wt-multiturn/target/debug/examples/truth serve-sim --ttft-ms 50 --itl-ms 10 --tokens 64 --threads 1 --prefix-cache < /tmp/gold/fifo_$case_name > /tmp/gold/sim_$case_name.txt 2>&1 & echo $! > /tmp/gold/simpid_$case_name )
exec 7>/tmp/gold/fifo_$case_name
for i in $(seq 50); do [ -s /tmp/gold/sim_$case_name.txt ] && break; sleep 0.2; done
port=$(head -1 /tmp/gold/sim_$case_name.txt | cut -d' ' -f1)
args=("$@"); args=("${args[@]//PORT/$port}")
echo "evalscope perf ${args[*]}" > "out_$case_name/command.txt"
echo "serve-sim --ttft-ms 50 --itl-ms 10 --tokens 64 --threads 1 --prefix-cache (llmperf's simulator: cargo run --example truth)" >> "out_$case_name/command.txt"
(cd "out_$case_name" && ln -sfn /work/shared/tokenizers tokenizers && cp ../common_en_70k.jsonl . 2>/dev/null; /work/evenv/bin/evalscope perf "${args[@]}" > console.txt 2>&1; echo "rc=$?" >> command.txt)
exec 7>&-
sleep 0.5
