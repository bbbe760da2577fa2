// CPU_FLASH's SIMD targets, from Highway's dispatch state (the kernels' translation units compile
// the same target set, see flash_targets.h).

#include "simd_targets.h"

#include <fmt/ranges.h>

#include "core/fail.h"
#include "flash_kernels.h"
#include "flash_targets.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace attnrt {

std::vector<std::string> cpu_flash_simd_targets() {
  std::vector<std::string> names;
  for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    names.emplace_back(hwy::TargetName(target));
  }
  return names;
}

std::string cpu_flash_simd_target() {
  return cpu_flash::dispatched_target_name();
}

bool cpu_flash_bf16_dot_products() {
  return cpu_flash::bf16_dot_products_available();
}

bool cpu_flash_amx_bf16() {
  return cpu_flash::amx_bf16_available();
}

std::string cpu_flash_bf16_prefill_products() {
  switch (cpu_flash::bf16_prefill_products_available()) {
    case cpu_flash::PrefillProducts::amx_tiles:
      return "AMX-BF16 tiles";
    case cpu_flash::PrefillProducts::bf16_dot:
      return "AVX512-BF16 dot products";
    case cpu_flash::PrefillProducts::f32:
      break;
  }
  return "f32 products";
}

ScopedSimdTarget::ScopedSimdTarget(const std::string& name) {
  for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (name == hwy::TargetName(target)) {
      hwy::SetSupportedTargetsForTest(target);
      return;
    }
  }
  fail("SIMD target \"{}\" is not available to CPU_FLASH on this CPU; available: {}", name,
       fmt::join(cpu_flash_simd_targets(), ", "));
}

ScopedSimdTarget::~ScopedSimdTarget() {
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace attnrt
