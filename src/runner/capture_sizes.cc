#include "attnrt/runner/capture_sizes.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "attnrt/config/cg_support.h"
#include "attnrt/config/config_limits.h"
#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// vLLM's default ladder: fine steps where small batches are common, coarser above 256. The
// last counter is 64-bit: with a cap near INT_MAX, `size += 16` must not wrap past it.
std::vector<int> generated_sizes(int cap, int max_num_batched_tokens) {
  std::vector<int> sizes;
  for (int size : {1, 2, 4}) {
    if (size <= cap) sizes.push_back(size);
  }
  for (int size = 8; size <= std::min(cap, 248); size += 8) sizes.push_back(size);
  for (std::int64_t size = 256; size <= cap; size += 16) sizes.push_back(static_cast<int>(size));
  // Newest: a full scheduler step gets its own graph instead of running eagerly.
  if (max_num_batched_tokens <= cap && sizes.back() != max_num_batched_tokens) {
    sizes.push_back(max_num_batched_tokens);
  }
  return sizes;
}

// min(max_num_seqs × uniform_decode_query_len × 2, 512); the product may pass INT_MAX.
int default_capture_cap(int max_num_seqs, int uniform_decode_query_len) {
  const std::uint64_t product =
      checked_product("default CUDA graph capture cap (max_num_seqs x decode query length x 2)",
                      std::max(max_num_seqs, 0), std::max(uniform_decode_query_len, 0), 2);
  return static_cast<int>(std::min<std::uint64_t>(product, 512));
}

std::vector<int> user_sizes(const CompilationConfig& compilation, int max_num_batched_tokens) {
  const std::vector<int>& given = compilation.capture_sizes;
  const int largest = *std::max_element(given.begin(), given.end());
  if (compilation.max_capture_size && *compilation.max_capture_size != largest) {
    fail(
        "compilation.max_capture_size {} disagrees with the largest of compilation.capture_sizes "
        "({}); set only one of them, or make them agree",
        *compilation.max_capture_size, largest);
  }
  std::set<int> kept;
  for (int size : given) {
    if (size <= max_num_batched_tokens) kept.insert(size);
  }
  return {kept.begin(), kept.end()};
}

}  // namespace

CaptureSizes compute_capture_sizes(const CompilationConfig& compilation,
                                   const SchedulerConfig& scheduler, int uniform_decode_query_len) {
  if (compilation.cudagraph_mode == CUDAGraphMode::NONE) return {};
  const int max_tokens = scheduler.max_num_batched_tokens;
  CaptureSizes result;
  if (!compilation.capture_sizes.empty()) {
    result.sizes = user_sizes(compilation, max_tokens);
  } else {
    const int requested = compilation.max_capture_size.value_or(
        default_capture_cap(scheduler.max_num_seqs, uniform_decode_query_len));
    const int cap = std::min(requested, max_tokens);
    if (cap < 1) {
      fail(
          "the CUDA graph capture cap is {} (max_capture_size {}, max_num_batched_tokens {}); "
          "it must be at least 1",
          cap, requested, max_tokens);
    }
    // A cap near INT_MAX would generate 134 million sizes; the config range bounds it.
    if (cap > limits::kMaxBatchedTokens) {
      fail(
          "the CUDA graph capture cap is {} tokens (compilation.max_capture_size {}, "
          "scheduler.max_num_batched_tokens {}), above the {} a ladder is generated for; lower "
          "scheduler.max_num_batched_tokens or compilation.max_capture_size",
          cap, requested, max_tokens, limits::kMaxBatchedTokens);
    }
    result.sizes = generated_sizes(cap, max_tokens);
  }
  result.max_capture_size = result.sizes.empty() ? 0 : result.sizes.back();
  return result;
}

CaptureSizes compute_capture_sizes(const EngineConfig& config) {
  return compute_capture_sizes(config.compilation, config.scheduler,
                               max_decode_query_len(config.speculative));
}

LoRACaseMap::LoRACaseMap(std::span<const int> capture_cases) {
  for (int count : capture_cases) {
    if (count > 0) positive_cases_.push_back(count);
  }
  std::sort(positive_cases_.begin(), positive_cases_.end());
  positive_cases_.erase(std::unique(positive_cases_.begin(), positive_cases_.end()),
                        positive_cases_.end());
}

int LoRACaseMap::map(int num_active_loras) const {
  if (num_active_loras <= 0 || positive_cases_.empty()) return num_active_loras;
  const auto it =
      std::lower_bound(positive_cases_.begin(), positive_cases_.end(), num_active_loras);
  return it == positive_cases_.end() ? positive_cases_.back() : *it;
}

}  // namespace attnrt
