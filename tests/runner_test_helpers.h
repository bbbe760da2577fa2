#pragma once
// Small helpers shared by the runner's per-step tests: descriptors, int vectors and error text.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/batch_descriptor.h"
#include "error_of.h"

namespace attnrt::testing {

// A descriptor of `mode` for `num_tokens` tokens (and `num_reqs` requests, uniform length).
inline BatchExecutionDescriptor graph(CUDAGraphMode mode, int num_tokens,
                                      std::optional<int> num_reqs = std::nullopt,
                                      std::optional<int> uniform_token_count = std::nullopt) {
  BatchExecutionDescriptor d;
  d.cg_mode = mode;
  d.num_tokens = num_tokens;
  d.num_reqs = num_reqs;
  d.uniform_token_count = uniform_token_count;
  return d;
}

using I32 = std::vector<std::int32_t>;
using I64 = std::vector<std::int64_t>;
using Flags = std::vector<std::uint8_t>;

template <typename T>
std::vector<T> vec(std::span<const T> values) {
  return std::vector<T>(values.begin(), values.end());
}

}  // namespace attnrt::testing
