#!/usr/bin/env bash
# clang-tidy with the root .clang-tidy over the library and the CLI (src/, tools/), using a build's
# compile_commands.json: scripts/check-tidy.sh [build-dir, default build/asan] [jobs, default 2].
# Every finding is an error. Not run here: CPU_FLASH's kernel files (flash_forward*.cc,
# flash_write_kv.cc, machine_probes.cc), which Highway compiles once per SIMD target (minutes of
# tidy time for code the kernel tests check against the reference), and tests/, bench/ and fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/asan}
jobs=${2:-2}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
runner=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
if [[ -z "$tidy" || -z "$runner" ]]; then
  echo "check-tidy: clang-tidy not found; run scripts/install-deps.sh" >&2
  exit 1
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "check-tidy: $build/compile_commands.json is missing; configure that build first" >&2
  exit 1
fi
mapfile -t files < <(git ls-files 'src/*.cc' 'tools/*.cc' |
  grep -vE '^src/backends/cpu_flash/(flash_forward(_[a-z0-9]+)?|flash_write_kv|machine_probes)\.cc$' |
  sed "s#^#$PWD/#")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$runner" -clang-tidy-binary "$tidy" -p "$build" -j "$jobs" -quiet "${files[@]}" >"$log" 2>&1; then
  grep -E "(error|warning):" "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u >&2 || cat "$log" >&2
  echo "check-tidy: findings above (${#files[@]} files checked)" >&2
  exit 1
fi
echo "check-tidy: ${#files[@]} files clean"
