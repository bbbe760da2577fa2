# CPU_FLASH's SIMD sources: the files that include Highway and so compile once per SIMD target
# (flash_targets.h). Release builds compile every target and pick one at run time.
#
# Instrumented builds (ATTNRT_SANITIZE, ATTNRT_BUILD_FUZZERS) compile them for one static target
# instead (HWY_COMPILE_ONLY_STATIC): every target instrumented would take ~20 minutes on a 2-core
# machine, and clang 14 rejects the per-target code (lambdas calling always_inline AVX-512 helpers
# lose the target attributes). Under ATTNRT_SANITIZE that target is the best the build machine
# runs (ATTNRT_SANITIZE_KERNEL_FLAGS=auto: AVX-512, else AVX2, else the baseline), so that ASan and
# UBSan see the hand-written AVX-512 paths, where most of the pointer arithmetic is; such a build
# runs only where it was built, which is what a sanitizer build is for. The fuzzers never run the
# kernels: there they stay uninstrumented, for the baseline target.

set(ATTNRT_KERNEL_SOURCES
    ${PROJECT_SOURCE_DIR}/src/backends/cpu_flash/flash_write_kv.cc
    ${PROJECT_SOURCE_DIR}/src/backends/cpu_flash/simd_targets.cc)
file(GLOB _attnrt_forward_kernels ${PROJECT_SOURCE_DIR}/src/backends/cpu_flash/flash_forward*.cc)
list(APPEND ATTNRT_KERNEL_SOURCES ${_attnrt_forward_kernels})

set(ATTNRT_SANITIZE_KERNEL_FLAGS "auto" CACHE STRING
    "Target flags for CPU_FLASH's kernels in ATTNRT_SANITIZE builds (auto: the build machine's best of AVX-512 and AVX2, else none)")

# The flags of the best static target this machine runs, or "" for the compiler's baseline.
# Highway's AVX2 and AVX3 targets also need AES and CLMUL, which no -march level implies. The
# AVX-512 code calls AVX512-BF16 helpers from lambdas, which only a TU-wide -mavx512bf16 lets
# inline; it is set on AVX-512 machines without BF16 too (VMs often hide it), which is safe
# because the BF16 instructions come only from those helpers' intrinsics, reached only behind
# the run-time check (cpu_flash_bf16_dot_products).
function(attnrt_detect_kernel_arch out)
  set(${out} "" PARENT_SCOPE)
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    return()
  endif()
  include(CheckCXXSourceRuns)
  check_cxx_source_runs([[
    int main() {
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul") ? 0 : 1;
    }]] ATTNRT_BUILD_MACHINE_HAS_AVX512)
  if(ATTNRT_BUILD_MACHINE_HAS_AVX512)
    set(${out} "-march=x86-64-v4;-mavx512bf16;-maes;-mpclmul" PARENT_SCOPE)
    return()
  endif()
  check_cxx_source_runs([[
    int main() {
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul") ? 0 : 1;
    }]] ATTNRT_BUILD_MACHINE_HAS_AVX2)
  if(ATTNRT_BUILD_MACHINE_HAS_AVX2)
    set(${out} "-march=x86-64-v3;-maes;-mpclmul" PARENT_SCOPE)
  endif()
endfunction()

# The target flags of instrumented kernels, found once for every directory that has SIMD sources.
set(ATTNRT_KERNEL_ARCH_FLAGS "")
if(ATTNRT_SANITIZE AND NOT ATTNRT_BUILD_FUZZERS)
  set(ATTNRT_KERNEL_ARCH_FLAGS "${ATTNRT_SANITIZE_KERNEL_FLAGS}")
  if(ATTNRT_KERNEL_ARCH_FLAGS STREQUAL "auto")
    attnrt_detect_kernel_arch(ATTNRT_KERNEL_ARCH_FLAGS)
  endif()
  message(STATUS "CPU_FLASH kernels: instrumented, one static target (${ATTNRT_KERNEL_ARCH_FLAGS})")
endif()

# attnrt_simd_sources(<file>...): compiles these Highway sources as the kernels are compiled.
# Source properties belong to the directory that sets them, so every CMakeLists.txt with such a
# source calls it (the library here, tools/support for the machine probes).
function(attnrt_simd_sources)
  if(ATTNRT_SANITIZE OR ATTNRT_BUILD_FUZZERS)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_DEFINITIONS HWY_COMPILE_ONLY_STATIC=1)
  endif()
  if(ATTNRT_BUILD_FUZZERS)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS -fno-sanitize=all)
  elseif(ATTNRT_SANITIZE)
    # -O2 (the preset's -O1 elsewhere) keeps the kernel tests' run time near release speed.
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "-O2;${ATTNRT_KERNEL_ARCH_FLAGS}")
  endif()
endfunction()

attnrt_simd_sources(${ATTNRT_KERNEL_SOURCES})
