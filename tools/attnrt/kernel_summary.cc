#include "kernel_summary.h"

#include <fmt/format.h>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/simd_targets.h"

namespace attnrt::cli {

std::string cpu_flash_summary(const AttentionPlan& plan) {
  for (const std::vector<AttentionGroup>& groups : plan.backends.attn_groups) {
    for (const AttentionGroup& group : groups) {
      const auto* flash = dynamic_cast<const CpuFlashBackend*>(group.backend.get());
      if (flash == nullptr) continue;
      return fmt::format("CPU_FLASH kernels: {} target, {} threads; bf16 caches: {}",
                         cpu_flash_simd_target(), flash->num_threads(),
                         flash->bf16_products().reason);
    }
  }
  return "";
}

}  // namespace attnrt::cli
