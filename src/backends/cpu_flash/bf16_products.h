#pragma once
// How CPU_FLASH multiplies bf16 caches on this machine: AVX512-BF16 dot products (twice the MACs
// per instruction, on bf16-rounded queries and softmax weights) or f32 products (exact widening,
// as CPU_REFERENCE). CpuFlashOptions::bf16_products asks; Bf16Products::measured lets a start-up
// probe decide, once per process.

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

namespace attnrt::cpu_flash {

// What the probe found: a GQA decode (32/8 heads, head 128, 1024 keys) on a bf16 cache that stays
// in the last-level cache, so that arithmetic decides, both ways, fastest of several rounds.
struct Bf16ProductsProbe {
  double dot_seconds = 0;
  double f32_seconds = 0;
  double max_error = 0;  // |dot - f32| / max(1, |f32|) over the outputs
};

// Runs the probe with `num_threads` threads (on a CPU with AVX512-BF16 only).
Bf16ProductsProbe probe_bf16_products(int num_threads);

// The choice for `requested`, and its reason; `measured` probes once per process.
Bf16ProductsChoice choose_bf16_products(Bf16Products requested, int num_threads);

}  // namespace attnrt::cpu_flash
