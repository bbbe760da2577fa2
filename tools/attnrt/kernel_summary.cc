#include "kernel_summary.h"

#include <fmt/format.h>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/simd_targets.h"
#include "support/engine_workload.h"

namespace attnrt::cli {

std::string cpu_flash_summary(const AttentionPlan& plan) {
  const CpuFlashBackend* flash = cpu_flash_backend_of(plan);
  if (flash == nullptr) return "";
  return fmt::format("CPU_FLASH kernels: {} target, {} threads; bf16 caches: {}",
                     cpu_flash_simd_target(), flash->num_threads(), flash->bf16_products().reason);
}

}  // namespace attnrt::cli
