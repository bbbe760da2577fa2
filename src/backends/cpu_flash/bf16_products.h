#pragma once
// How CPU_FLASH multiplies bf16 caches on this machine: AVX512-BF16 dot products (twice the MACs
// per instruction, on bf16-rounded queries and softmax weights) or f32 products (exact widening,
// as CPU_REFERENCE). CpuFlashOptions::bf16_products asks; Bf16Products::automatic follows the
// CPU's features, so that the choice (and every digest) is the same on every run of a machine.

#include <cstdint>

#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

namespace attnrt::cpu_flash {

// Which path a probe times: a GQA decode (32/8 heads, head 128, 1024 keys) on dot products, or a
// 64-token chunked prefill over the same keys on AMX tiles (else dot products); the cache stays
// in the last-level cache, so that arithmetic decides.
enum class Bf16ProbeCase : std::uint8_t { decode_dot, prefill };

// What a probe found, both ways, fastest of several rounds.
struct Bf16ProductsProbe {
  double dot_seconds = 0;
  double f32_seconds = 0;
  double max_error = 0;  // |dot - f32| / max(1, |f32|) over the outputs
};

// Runs a probe with `num_threads` threads (on a CPU with AVX512-BF16 only). Informs; never
// chooses: `attnrt bench attention` prints it beside the choice.
Bf16ProductsProbe probe_bf16_products(int num_threads, Bf16ProbeCase probe_case);

// The choice for decode and prefill as requested, and its reason (one line). `automatic`: decode
// on dot products where the CPU runs them at its FMA's rate (bf16_dot_products_at_fma_rate);
// prefill on AMX-BF16 tiles where the CPU and OS have them, else as decode.
Bf16ProductsChoice choose_bf16_products(Bf16Products decode, Bf16Products prefill);

}  // namespace attnrt::cpu_flash
