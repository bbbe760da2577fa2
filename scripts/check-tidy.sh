#!/usr/bin/env bash
# clang-tidy with the root .clang-tidy over the library and the CLI (src/, tools/), using a build's
# compile_commands.json: scripts/check-tidy.sh [--changed-since REV] [build-dir, default build/asan]
# [jobs, default 2]. Every finding is an error. With --changed-since, only the files that need it:
# those whose text differs from REV, and one includer of each changed header (through which
# clang-tidy reports the header); all of them when .clang-tidy changed. Not run here: CPU_FLASH's kernel files (flash_forward*.cc,
# flash_write_kv.cc) and the machine probes (tools/support/machine_probes.cc), which Highway
# compiles once per SIMD target (minutes of tidy time for code the kernel tests check against the
# reference), and tests/, bench/ and fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
since=
if [[ "${1:-}" == --changed-since ]]; then
  since=${2:?check-tidy: --changed-since needs a git revision}
  shift 2
fi
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
  grep -vE '^(src/backends/cpu_flash/(flash_forward(_[a-z0-9]+)?|flash_write_kv)|tools/support/machine_probes)\.cc$' |
  sed "s#^#$PWD/#")
if [[ -n "$since" ]]; then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | scripts/lib/tidy_files_needing_lint.py "$build" "$since")
  if ((${#files[@]} == 0)); then
    echo "check-tidy: no file changed since $since needs it"
    exit 0
  fi
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$runner" -clang-tidy-binary "$tidy" -p "$build" -j "$jobs" -quiet "${files[@]}" >"$log" 2>&1; then
  grep -E "(error|warning):" "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u >&2 || cat "$log" >&2
  echo "check-tidy: findings above (${#files[@]} files checked)" >&2
  exit 1
fi
echo "check-tidy: ${#files[@]} files clean${since:+ (those changed since $since)}"
