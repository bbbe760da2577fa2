#!/usr/bin/env bash
# Ranks that cannot run together stop with one line each and exit 2 (CTest, builds with MPI):
# rank 1 with another block size (the KV cache agreement names it), and a world that is not
# the config's tensor-parallel size.
#   ranks_that_disagree.sh ATTNRT MPIEXEC
set -uo pipefail
attnrt=$1
mpiexec=$2
status=0
expect() {  # expect NAME PATTERN COMMAND...: exit code 2, one matching line from each rank
  local name=$1 pattern=$2
  shift 2
  local out code
  out=$("$@" 2>&1)
  code=$?
  local lines
  lines=$(echo "$out" | grep -c "^attnrt: error: rank [01]: .*$pattern")
  if [[ $code -eq 0 || $lines -ne 2 ]]; then
    echo "$name: exit $code, $lines matching lines; output:"
    echo "$out"
    status=1
  else
    echo "$name: exit $code, one line per rank"
  fi
}
run=(run --requests 4 --prompt-len 8:16 --output-len 2:4 --compare 0 --tensor-parallel-size 2)
expect "block size differs on rank 1" "rank 1's KV cache groups differ from rank 0's" \
  "$mpiexec" -np 1 "$attnrt" "${run[@]}" : -np 1 "$attnrt" "${run[@]}" --block-size 32
expect "world is not the tensor-parallel size" "the communicator has 2 ranks" \
  "$mpiexec" -np 2 "$attnrt" run --requests 4 --compare 0
exit $status
