#pragma once
// Entry points of the CPU_FLASH SIMD kernels (each dispatches to the best target the CPU has).

#include <cstdint>
#include <span>

#include "attnrt/attention/attention_backend.h"
#include "flash_types.h"

namespace attnrt::cpu_flash {

// Runs every item of `task`, then merges its key splits, with the kernel of the cache's dtype.
void run_forward(const ForwardTask& task);
// The kernel of one cache dtype (flash_forward_<dtype>.cc).
void run_forward_f32(const ForwardTask& task);
void run_forward_f16(const ForwardTask& task);
void run_forward_bf16(const ForwardTask& task);
void run_forward_fp8(const ForwardTask& task);
// True when the dispatched target has the AVX512-BF16 path and the CPU runs it.
bool bf16_dot_products_available();
// True when, in addition, the CPU has AMX-BF16 and the OS grants this process the tile state
// (asked once, Linux: arch_prctl ARCH_REQ_XCOMP_PERM).
bool amx_bf16_available();
// The bf16 products GEMM items can take here: AMX tiles, else AVX512-BF16 dot products, else f32.
PrefillProducts bf16_prefill_products_available();
// Whether the CPU issues AVX512-BF16 dot products at its f32 FMA's rate, so that they double the
// MACs per cycle: AMD's Zen 4 and later (decode 1.28-1.33x, prefill 1.6-1.9x the speed of f32
// products). Intel's cores run vdpbf16ps at half the FMA's rate (Sapphire Rapids: decode 0.94x).
// A CPU feature, not a timing: docs/cpu-flash.md §5.
bool bf16_dot_products_at_fma_rate();
// Whether the four-row stream should prefetch each next step's records into L2: on AMD CPUs
// before Zen 5 (Zen 4: 17.5 → 21.0 GiB/s); on Intel and on Zen 5 the hardware prefetchers do
// better alone (Sapphire Rapids: 0.71–0.78 → 0.86–0.96 of the roofline without; Zen 5: 5–25 %
// faster without). docs/cpu-flash.md §6.
bool stream_prefetch_helps();

// One write_kv call: rows of K and V (MLA: the latent only) to their slots, converted to the
// cache dtype with round-to-nearest-even; PAD_SLOT_ID rows are skipped. Slots are pre-checked.
struct WriteTask {
  CacheView cache;
  ActivationView key;
  ActivationView value;
  bool writes_value = true;
  std::span<const std::int64_t> slot_mapping;
  int num_tokens = 0;
  int num_kv_heads = 0;
  int num_threads = 1;
};
void run_write_kv(const WriteTask& task);

// The Highway target the kernels dispatch to on this CPU ("AVX3", "AVX2", "NEON", ...).
const char* dispatched_target_name();

}  // namespace attnrt::cpu_flash
