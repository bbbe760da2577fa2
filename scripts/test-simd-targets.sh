#!/usr/bin/env bash
# Forces every SIMD target a build compiled (and this CPU runs) through CPU_FLASH's kernel
# property tests: each tests/cpu_flash_*_test binary once per target, pinned with
# ATTNRT_TEST_SIMD_TARGET (tests/simd_target_pin.cc). A release build compiles AVX3_DL, AVX3,
# AVX2 and the portable fallback (SCALAR or EMU128, by Highway's version) on x86; without this
# only the best one the CPU runs is tested outside the few tests that loop over targets themselves.
# usage: scripts/test-simd-targets.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
binaries=("$build"/tests/cpu_flash_*_test)
[[ -x ${binaries[0]} ]] || { echo "test-simd-targets: no cpu_flash tests in $build/tests"; exit 1; }
# gtest prints its own banner first: the targets are the lines that are a bare name.
mapfile -t targets < <(ATTNRT_TEST_SIMD_TARGET=list "${binaries[0]}" | grep -E '^[A-Z0-9_]+$')
(( ${#targets[@]} > 0 )) || { echo "test-simd-targets: no SIMD target listed"; exit 1; }
echo "test-simd-targets: ${#targets[@]} targets: ${targets[*]}"
status=0
for target in "${targets[@]}"; do
  for binary in "${binaries[@]}"; do
    log=$(mktemp)
    if ATTNRT_TEST_SIMD_TARGET=$target "$binary" --gtest_brief=1 >"$log" 2>&1; then
      echo "  $target $(basename "$binary"): $(grep -E '^\[  PASSED  \]' "$log" | sed 's/\[  PASSED  \] //')"
    else
      echo "  $target $(basename "$binary"): FAILED"
      cat "$log"
      status=1
    fi
    rm -f "$log"
  done
done
exit $status
