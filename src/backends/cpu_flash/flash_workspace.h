#pragma once
// The bytes one forward call needs, and how they are carved from the workspace: per-thread
// scratch tiles, the batch's requests and plans, and what is left for split partials.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "attnrt/core/checked_math.h"
#include "flash_types.h"

namespace attnrt::cpu_flash {

inline std::size_t align_up(std::size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// Everything except the partials. Checked: head sizes and thread counts come from the config.
inline std::size_t fixed_workspace_bytes(int key_size, int value_size, int num_threads,
                                         int num_reqs) {
  constexpr std::string_view what = "CPU_FLASH workspace bytes";
  const std::uint64_t reqs = static_cast<std::uint64_t>(std::max(num_reqs, 0));
  const std::uint64_t tiles = checked_product(what, ScratchLayout::of(key_size, value_size).bytes(),
                                              std::max(num_threads, 0));
  const std::uint64_t aligned_tiles = checked_add(tiles, 63, what) / 64 * 64;
  const std::uint64_t bytes =
      checked_add(checked_add(aligned_tiles, align_up(reqs * sizeof(Request)), what),
                  align_up(reqs * sizeof(RequestPlan)), what);  // reqs < 2^31: these products fit
  return checked_cast<std::size_t>(bytes, what);
}

struct CarvedWorkspace {
  float* scratch = nullptr;
  std::span<Request> requests;
  std::span<RequestPlan> plans;
  float* partials = nullptr;
  std::int64_t partial_floats = 0;  // room left for partials
};

// `base` is 64-byte aligned and holds at least fixed_workspace_bytes(...).
inline CarvedWorkspace carve_workspace(std::byte* base, std::size_t size, int key_size,
                                       int value_size, int num_threads, int num_reqs) {
  const std::size_t reqs = static_cast<std::size_t>(num_reqs);
  CarvedWorkspace carved;
  std::size_t at = 0;
  carved.scratch = reinterpret_cast<float*>(base);
  at += align_up(ScratchLayout::of(key_size, value_size).bytes() *
                 static_cast<std::size_t>(num_threads));
  carved.requests = {reinterpret_cast<Request*>(base + at), reqs};
  at += align_up(reqs * sizeof(Request));
  carved.plans = {reinterpret_cast<RequestPlan*>(base + at), reqs};
  at += align_up(reqs * sizeof(RequestPlan));
  carved.partials = reinterpret_cast<float*>(base + at);
  carved.partial_floats = static_cast<std::int64_t>((size - std::min(size, at)) / sizeof(float));
  return carved;
}

}  // namespace attnrt::cpu_flash
