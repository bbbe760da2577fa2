#pragma once
// Which SIMD code CPU_FLASH runs. Its kernels are compiled for several targets (AVX-512, AVX2,
// NEON, a portable fallback) and the best one the CPU supports is picked at run time. Tests pin
// each target in turn to check all of them; benchmarks print the one in use.

#include <string>
#include <vector>

namespace attnrt {

// Targets compiled into CPU_FLASH that this CPU can run, best first ("AVX3", "AVX2", "EMU128").
std::vector<std::string> cpu_flash_simd_targets();
// The target the kernels dispatch to now.
std::string cpu_flash_simd_target();
// Whether that target serves bf16 caches with AVX512-BF16 dot products on this CPU (when
// CpuFlashOptions::bf16_dot_products allows).
bool cpu_flash_bf16_dot_products();
// Whether, in addition, this CPU and OS run prefill on AMX-BF16 tiles (when
// CpuFlashOptions::bf16_prefill_products allows; dot products otherwise).
bool cpu_flash_amx_bf16();
// What bf16 prefill products this target and CPU run, when chosen: "AMX-BF16 tiles",
// "AVX512-BF16 dot products" or "f32 products".
std::string cpu_flash_bf16_prefill_products();

// While alive, CPU_FLASH dispatches to `name` (one of cpu_flash_simd_targets()); throws Error for
// any other name. Process-wide: for tests and benchmarks, not for concurrent use.
class ScopedSimdTarget {
 public:
  explicit ScopedSimdTarget(const std::string& name);
  ~ScopedSimdTarget();
  ScopedSimdTarget(const ScopedSimdTarget&) = delete;
  ScopedSimdTarget& operator=(const ScopedSimdTarget&) = delete;
};

}  // namespace attnrt
