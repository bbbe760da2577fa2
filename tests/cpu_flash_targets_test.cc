// CPU_FLASH's hand-written AVX-512 paths serve every AVX-512 target Highway compiles (AVX3 and
// AVX3_DL here; AVX3_ZEN4 and AVX3_SPR in newer Highway), not only the one they were written on:
// forced to each target, the AVX512-BF16 dot products (and prefill's bf16 products) stay
// available wherever the CPU has them.
// (cpu_flash_backend_test checks every target's results against the reference.)

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu_flash/simd_targets.h"

namespace attnrt {
namespace {

bool is_avx512_target(const std::string& name) {
  return name.rfind("AVX3", 0) == 0;
}

TEST(CpuFlashTargetsTest, EveryAvx512TargetKeepsTheAvx512Paths) {
#if defined(__x86_64__)
  const bool cpu_has_bf16 = __builtin_cpu_supports("avx512bf16") != 0;
  int avx512_targets = 0;
  for (const std::string& target : cpu_flash_simd_targets()) {
    const ScopedSimdTarget pinned(target);
    ASSERT_EQ(cpu_flash_simd_target(), target);
    const bool avx512 = is_avx512_target(target);
    avx512_targets += avx512 ? 1 : 0;
    EXPECT_EQ(cpu_flash_bf16_dot_products(), avx512 && cpu_has_bf16) << target;
    // Prefill's bf16 products follow the same target: AMX tiles or dot products, f32 elsewhere.
    const std::string prefill = !(avx512 && cpu_has_bf16) ? "f32 products"
                                : cpu_flash_amx_bf16()    ? "AMX-BF16 tiles"
                                                          : "AVX512-BF16 dot products";
    EXPECT_EQ(cpu_flash_bf16_prefill_products(), prefill) << target;
  }
  const std::vector<std::string> targets = cpu_flash_simd_targets();
  if (targets.size() == 1) {
    // A sanitizer build: one static target, the best the build machine runs, so that the
    // sanitizers see the AVX-512 paths wherever the CPU has them (cmake/kernel_sources.cmake).
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      EXPECT_TRUE(is_avx512_target(targets.front())) << targets.front();
    }
  } else if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi2") &&
             __builtin_cpu_supports("avx512bitalg") && __builtin_cpu_supports("vpclmulqdq") &&
             __builtin_cpu_supports("vaes")) {
    // A CPU with Ice Lake's AVX-512 extensions runs both compiled AVX-512 targets.
    EXPECT_GE(avx512_targets, 2);
  }
#else
  GTEST_SKIP() << "x86 only";
#endif
}

}  // namespace
}  // namespace attnrt
