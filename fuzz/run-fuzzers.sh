#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for SECONDS each, FUZZ_JOBS at a time (default 1; CI
# uses one per core), on its seed corpus
# and fuzz/regressions/<target>/ (read only; new inputs go to BUILD_DIR/fuzz/corpus/<target>).
# Exits non-zero if any target finds a crash, leak, timeout or out-of-memory; the input is then
# in BUILD_DIR/fuzz/artifacts/<target>/ and the report in BUILD_DIR/fuzz/logs/<target>.log.
#   usage: fuzz/run-fuzzers.sh [SECONDS=60] [BUILD_DIR=build/fuzz] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${2:-build/fuzz}
shift $(( $# < 2 ? $# : 2 ))
targets="$build/fuzz/targets.txt"
[[ -f "$targets" ]] || { echo "run-fuzzers: no $targets; cmake --preset fuzz first" >&2; exit 2; }

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Symbolised stacks without the unversioned `llvm` package (llvm-14 ships the tool).
if [[ -z "${ASAN_SYMBOLIZER_PATH:-}" && -x /usr/lib/llvm-14/bin/llvm-symbolizer ]]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
# One target: its summary line on stdout, "ok" or "FAILED" in logs/<target>.status.
run_target() {
  local name=$1 dict=$2 seeds=$3
  shift 3
  local corpus="$build/fuzz/corpus/$name" artifacts="$build/fuzz/artifacts/$name"
  local log="$build/fuzz/logs/$name.log" status started=$SECONDS
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
               -artifact_prefix="$artifacts/")
  [[ "$dict" == "-" ]] || flags+=(-dict="$dict")
  local dirs=("$corpus") dir
  for dir in $seeds; do [[ -d "$dir" ]] && dirs+=("$dir"); done  # a new target has no regressions
  if nice -n 10 "$build/fuzz/$name" "${flags[@]}" "$@" "${dirs[@]}" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
  fi
  echo "$status" >"$build/fuzz/logs/$name.status"
  # The last coverage line and the final stats, e.g. "#41522 DONE cov: 3305 ft: 9770 ...".
  local summary execs
  summary=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  execs=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
  echo "run-fuzzers: $name $status after $((SECONDS - started)) s: ${summary:-no progress line}; ${execs:-?} exec/s"
  if [[ "$status" == FAILED ]]; then
    grep -E 'ERROR:|runtime error|fuzz: |SUMMARY|Test unit written|==[0-9]+==' "$log" | head -n 20 >&2 || true
  fi
}

jobs=${FUZZ_JOBS:-1}
names=()
while read -r name dict seeds; do
  [[ -n "$name" ]] || continue
  names+=("$name")
  rm -f "$build/fuzz/logs/$name.status"
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  run_target "$name" "$dict" "$seeds" "$@" &
done <"$targets"
wait
failed=()
for name in "${names[@]}"; do
  [[ "$(cat "$build/fuzz/logs/$name.status" 2>/dev/null)" == ok ]] || failed+=("$name")
done

if (( ${#failed[@]} > 0 )); then
  echo "run-fuzzers: findings in ${failed[*]}; see $build/fuzz/logs/ and $build/fuzz/artifacts/" >&2
  exit 1
fi
