#!/usr/bin/env bash
# `attnrt run` on two MPI ranks against one rank (CTest, builds with MPI): the same generated
# tokens (output digest), both dense checks passing, and each rank holding half the KV bytes of
# the one-rank run for the same block count. An f16 cache: CPU_FLASH picks its bf16 products per
# process by measurement, and two processes may pick differently under load.
#   tensor_parallel_run.sh ATTNRT MPIEXEC
set -euo pipefail
attnrt=$1
mpiexec=$2
args=(run --requests 6 --prompt-len 8:40 --output-len 4:12 --seed 7 --compare 0 --check --json
      --num-gpu-blocks-override 2048 --kv-cache-dtype float16)
one=$("$attnrt" "${args[@]}")
two=$("$mpiexec" -np 2 "$attnrt" "${args[@]}" --tensor-parallel-size 2)
field() { echo "$1" | grep -m1 "\"$2\":" | sed -E 's/.*: "?([^",]*)"?,?$/\1/'; }
digest_one=$(field "$one" output_digest)
digest_two=$(field "$two" output_digest)
echo "digests: one rank $digest_one, two ranks $digest_two"
[[ -n "$digest_one" && "$digest_one" == "$digest_two" ]] || { echo "tokens differ"; exit 1; }
[[ $(echo "$one" | grep -c '"passed": true') -eq 1 ]] || { echo "one-rank check failed"; exit 1; }
[[ $(echo "$two" | grep -c '"passed": true') -eq 1 ]] || { echo "two-rank check failed"; exit 1; }
echo "two-rank check: max |logit diff| $(field "$two" max_abs_logit_diff)"
bytes_one=$("$attnrt" plan --num-gpu-blocks-override 2048 --kv-cache-dtype float16 --json | grep -m1 '"size":' |
            sed -E 's/[^0-9]//g')
mapfile -t bytes_two < <(echo "$two" | grep '"kv_cache_bytes":' | sed -E 's/[^0-9]//g')
echo "KV bytes: one rank $bytes_one, two ranks ${bytes_two[*]}"
[[ ${#bytes_two[@]} -eq 2 ]] || { echo "expected two ranks' KV bytes"; exit 1; }
for bytes in "${bytes_two[@]}"; do
  [[ $((bytes * 2)) -eq $bytes_one ]] || { echo "a rank holds $bytes B, not half of $bytes_one"; exit 1; }
done
