#pragma once
// What CPU kernels a plan runs: CPU_FLASH's SIMD target, its threads and how it multiplies bf16
// caches, with the reason (`attnrt plan` and `attnrt run` print it; `run --json` as `cpu_flash`).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "attnrt/runner/attention_plan.h"

namespace attnrt::cli {

struct CpuFlashKernels {
  std::string simd_target;  // "AVX3_DL", "AVX2", ...
  int threads = 1;
  std::string requested;  // bf16 products asked for: "auto", "dot" or "f32" (decode; prefill
                          // too unless pinned apart)
  std::string decode;     // what decode items of a bf16 cache run: "AVX512-BF16 dot products"
                          // or "f32 products"
  std::string prefill;    // what prefill items run: "AMX-BF16 tiles", "AVX512-BF16 dot
                          // products" or "f32 products"
  std::string reason;     // the choice's one-line reason
};

// The CPU_FLASH backend the plan runs, or nullopt when no group runs CPU_FLASH.
std::optional<CpuFlashKernels> cpu_flash_kernels(const AttentionPlan& plan);
// "CPU_FLASH kernels: AVX3_DL target, 2 threads; bf16 caches: ..." or "" without CPU_FLASH.
std::string cpu_flash_summary(const AttentionPlan& plan);
nlohmann::json cpu_flash_json(const CpuFlashKernels& kernels);

}  // namespace attnrt::cli
