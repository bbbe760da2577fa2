// KV cache groups and a byte budget to blocks and placement (SEMANTICS §4.3). All groups share one
// backing of `layer_slots` × num_blocks pages: layer slot l of every group uses the same bytes, and
// a block id belongs to one group at a time, so the groups overlay each other safely.

#include "attnrt/kv/kv_cache_planner.h"

#include <algorithm>

#include "attnrt/core/error.h"
#include "attnrt/kv/kv_cache_views.h"
#include "byte_text.h"

namespace attnrt {
namespace {

using detail::format_bytes;

// The page size every group shares (get_kv_cache_groups unified them).
std::int64_t common_page_size(const std::vector<KVCacheGroupSpec>& groups) {
  const KVCacheSpec& first = groups.front().kv_cache_spec;
  for (std::size_t id = 1; id < groups.size(); ++id) {
    const KVCacheSpec& spec = groups[id].kv_cache_spec;
    if (spec.page_size_bytes() != first.page_size_bytes()) {
      fail(
          "KV cache groups 0 ({}) and {} ({}) have different page sizes; group the layers with "
          "get_kv_cache_groups, which unifies page sizes",
          first.describe(), id, spec.describe());
    }
  }
  return first.page_size_bytes();
}

int max_layers_per_group(const std::vector<KVCacheGroupSpec>& groups) {
  std::size_t most = 0;
  for (const auto& group : groups) most = std::max(most, group.layer_names.size());
  return static_cast<int>(most);
}

}  // namespace

// num_blocks counts every block of the budget, including the block a block pool keeps as its
// null block (vLLM reserves block 0); the pool subtracts it, not the plan.
KVCacheConfig get_kv_cache_config_from_groups(std::vector<KVCacheGroupSpec> groups,
                                              std::uint64_t available_memory,
                                              KVCacheLayout layout) {
  KVCacheConfig config;
  config.kv_cache_layout = layout;
  if (groups.empty()) {
    config.num_blocks = 1;  // only the null block: no layer owns a KV cache
    return config;
  }
  const std::int64_t page = common_page_size(groups);
  const int layer_slots = max_layers_per_group(groups);
  if (layer_slots == 0) {
    fail("KV cache groups hold no layers; pass no groups when no layer owns a KV cache");
  }
  const std::uint64_t block_bytes = static_cast<std::uint64_t>(page) * layer_slots;
  const auto num_blocks = static_cast<std::int64_t>(available_memory / block_bytes);
  if (num_blocks == 0) {
    fail(
        "cache.memory: {} holds no KV cache block: one block for each of the {} layer slots "
        "needs {} ({} per layer page); raise cache.memory to at least {} bytes",
        format_bytes(available_memory), layer_slots, format_bytes(block_bytes), format_bytes(page),
        block_bytes);
  }
  config.num_blocks = num_blocks;
  config.layer_slots = layer_slots;
  for (const auto& group : groups) {
    if (group.layer_names.empty()) continue;
    const auto strides =
        compute_layout_strides(group.kv_cache_spec, num_blocks, layer_slots, layout);
    KVCacheTensor tensor;
    tensor.size = block_bytes * static_cast<std::uint64_t>(num_blocks);
    tensor.layers = group.layer_names;
    tensor.layer_stride = strides[kv_axis::L];
    tensor.block_stride = strides[kv_axis::B];
    config.kv_cache_tensors.push_back(std::move(tensor));
  }
  config.kv_cache_groups = std::move(groups);
  return config;
}

// vLLM's estimate multiplies a request's bytes (the sum over groups of each spec's bound) and a
// block's bytes (page × layers per group) by the layers per group; the factor cancels, leaving
// blocks per request = Σ over groups of the blocks that group's spec may hold for one request.
// A request holds at least one block, so the estimate stays finite.
double max_concurrency(const KVCacheConfig& kv_cache_config, const EngineConfig& config) {
  const auto& groups = kv_cache_config.kv_cache_groups;
  if (groups.empty()) return 0.0;
  std::int64_t bytes_per_request = 0;
  for (const auto& group : groups) {
    bytes_per_request += group.kv_cache_spec.max_memory_usage_bytes(config);
  }
  const std::int64_t page = groups.front().kv_cache_spec.page_size_bytes();
  const std::int64_t blocks_per_request =
      std::max<std::int64_t>(1, (bytes_per_request + page - 1) / page);
  return static_cast<double>(kv_cache_config.num_blocks) / static_cast<double>(blocks_per_request);
}

std::int64_t tokens_capacity(const KVCacheConfig& kv_cache_config) {
  const auto& groups = kv_cache_config.kv_cache_groups;
  if (groups.empty()) return 0;
  int block_size = groups.front().kv_cache_spec.block_size;
  for (const auto& group : groups)
    block_size = std::min(block_size, group.kv_cache_spec.block_size);
  return kv_cache_config.num_blocks * block_size;
}

}  // namespace attnrt
