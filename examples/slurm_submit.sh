#!/usr/bin/env bash
# Submits a sharded llmperf run to Slurm: an array of N shard tasks (examples/slurm_shards.sbatch) that all start
# their measured schedule at one instant, then `llmperf merge` as a job that runs only after every task succeeded.
#
#   examples/slurm_submit.sh N OUT [llmperf flags…]
#
# N     number of shards (array tasks 0..N-1; give each its own node with extra sbatch options in $LLMPERF_SBATCH)
# OUT   a folder on storage shared by the nodes: shards write OUT/shards/…, the merge writes OUT/merged/<name>
# Environment: LLMPERF (the binary, default `llmperf`), LLMPERF_START_DELAY_S (seconds from now to the common
# start, default 60: long enough for every task to be scheduled and to prepare its requests),
# LLMPERF_SBATCH (extra sbatch options for the array, e.g. "--nodes=1 --exclusive --partition=cpu").
# Prints the array and merge job ids and the start instant.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
shards=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
llmperf=${LLMPERF:-llmperf}
start_at=$(date -u -d "+${LLMPERF_START_DELAY_S:-60} seconds" +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$out"
# shellcheck disable=SC2086  # LLMPERF_SBATCH holds several options
array=$(sbatch --parsable ${LLMPERF_SBATCH:-} --array="0-$((shards - 1))" \
  --output="$out/shard-%A_%a.out" \
  --export="ALL,LLMPERF=$llmperf,LLMPERF_START_AT=$start_at,LLMPERF_OUT=$out" \
  "$here/slurm_shards.sbatch" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --job-name=llmperf-merge --dependency="afterok:$array" \
  --output="$out/merge-%j.out" \
  --wrap="\"$llmperf\" merge \"$out/shards\" --outputs-dir \"$out/merged\"")
merge=${merge%%;*}
echo "array_job=$array merge_job=$merge start_at=$start_at"
