#pragma once
// One line on the CPU kernels a plan runs: CPU_FLASH's SIMD target and how it multiplies bf16
// caches, with the reason (`attnrt plan` and `attnrt run` print it).

#include <string>

#include "attnrt/runner/attention_plan.h"

namespace attnrt::cli {

// "CPU_FLASH kernels: AVX3_DL target; bf16 caches: ..." or "" when no group runs CPU_FLASH.
std::string cpu_flash_summary(const AttentionPlan& plan);

}  // namespace attnrt::cli
