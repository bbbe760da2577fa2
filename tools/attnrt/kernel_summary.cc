#include "kernel_summary.h"

#include <fmt/format.h>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "backends/cpu_flash/simd_targets.h"
#include "support/engine_workload.h"

namespace attnrt::cli {

std::optional<CpuFlashKernels> cpu_flash_kernels(const AttentionPlan& plan) {
  const CpuFlashBackend* flash = cpu_flash_backend_of(plan);
  if (flash == nullptr) return std::nullopt;
  CpuFlashKernels kernels;
  kernels.simd_target = cpu_flash_simd_target();
  kernels.threads = flash->num_threads();
  kernels.requested = bf16_products_name(flash->options().bf16_products);
  kernels.decode = flash->runs_bf16_dot_products() ? "AVX512-BF16 dot products" : "f32 products";
  kernels.prefill = flash->runs_bf16_prefill_products() ? cpu_flash_bf16_prefill_products()
                                                        : std::string("f32 products");
  kernels.reason = flash->bf16_products().reason;
  return kernels;
}

std::string cpu_flash_summary(const AttentionPlan& plan) {
  const std::optional<CpuFlashKernels> kernels = cpu_flash_kernels(plan);
  if (!kernels) return "";
  return fmt::format("CPU_FLASH kernels: {} target, {} threads; bf16 caches: {}",
                     kernels->simd_target, kernels->threads, kernels->reason);
}

nlohmann::json cpu_flash_json(const CpuFlashKernels& kernels) {
  return {{"simd_target", kernels.simd_target},
          {"threads", kernels.threads},
          {"bf16_products",
           {{"requested", kernels.requested},
            {"decode", kernels.decode},
            {"prefill", kernels.prefill},
            {"reason", kernels.reason}}}};
}

}  // namespace attnrt::cli
