// KV cache groups and a byte budget to blocks and placement (SEMANTICS §4.3). All groups share one
// backing of `layer_slots` × num_blocks pages: layer slot l of every group uses the same bytes, and
// a block id belongs to one group at a time, so the groups overlay each other safely.

#include "attnrt/kv/kv_cache_planner.h"

#include <algorithm>
#include <limits>

#include "attnrt/core/checked_math.h"
#include "attnrt/kv/kv_cache_views.h"
#include "byte_text.h"
#include "core/fail.h"

namespace attnrt {
namespace {

using detail::format_bytes;

// A zero page would divide the budget by zero; only a spec built field by field can have one.
std::int64_t positive_page_size(const KVCacheSpec& spec) {
  const std::int64_t page = spec.page_size_bytes();
  if (page <= 0) {
    fail("KV cache spec {} has an empty page; its head slots, states and entries must be positive",
         spec.describe());
  }
  return page;
}

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
  return positive_page_size(first);
}

int max_layers_per_group(const std::vector<KVCacheGroupSpec>& groups) {
  std::size_t most = 0;
  for (const auto& group : groups) most = std::max(most, group.layer_names.size());
  return checked_cast<int>(most, "layers of one KV cache group");
}

// Block ids are int32 in block tables and slot mappings, and view offsets are int64 bytes: the
// blocks the budget holds must fit both.
void check_budget_fits(std::uint64_t available_memory, std::uint64_t block_bytes) {
  constexpr std::uint64_t kMaxBlocks = std::numeric_limits<std::int32_t>::max();
  constexpr std::uint64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();
  const std::uint64_t num_blocks = available_memory / block_bytes;
  if (num_blocks > kMaxBlocks) {
    fail(
        "cache.memory: {} holds {} KV cache blocks of {}, more than the {} block ids of int32 "
        "block tables; lower cache.memory to at most {} bytes or raise cache.block_size",
        format_bytes(available_memory), num_blocks, format_bytes(block_bytes), kMaxBlocks,
        kMaxBlocks * block_bytes);  // num_blocks > kMaxBlocks: this product is below the budget
  }
  if (num_blocks * block_bytes > kMaxBytes) {
    fail(
        "cache.memory: {} blocks of {} make a {}-byte KV cache, past the int64 byte offsets of "
        "its views; lower cache.memory below {} bytes",
        num_blocks, format_bytes(block_bytes), num_blocks * block_bytes, kMaxBytes);
  }
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
  const std::uint64_t block_bytes =
      checked_mul(static_cast<std::uint64_t>(page), static_cast<std::uint64_t>(layer_slots),
                  "KV cache bytes per block (page bytes x layer slots)");
  check_budget_fits(available_memory, block_bytes);
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
    tensor.size = block_bytes * static_cast<std::uint64_t>(num_blocks);  // ≤ available_memory
    tensor.layers = group.layer_names;
    tensor.layer_stride = strides[kv_axis::L];
    tensor.block_stride = strides[kv_axis::B];
    config.kv_cache_tensors.push_back(std::move(tensor));
  }
  config.kv_cache_groups = std::move(groups);
  return config;
}

std::uint64_t kv_cache_bytes_per_block(const std::vector<KVCacheGroupSpec>& groups) {
  if (groups.empty()) return 0;
  return checked_mul(static_cast<std::uint64_t>(common_page_size(groups)),
                     static_cast<std::uint64_t>(max_layers_per_group(groups)),
                     "KV cache bytes per block (page bytes x layer slots)");
}

std::uint64_t kv_cache_budget(const std::vector<KVCacheGroupSpec>& groups,
                              const CacheConfig& cache) {
  if (!cache.num_gpu_blocks_override || groups.empty()) return cache.memory;
  return checked_mul(static_cast<std::uint64_t>(*cache.num_gpu_blocks_override),
                     kv_cache_bytes_per_block(groups),
                     "KV cache bytes of cache.num_gpu_blocks_override blocks");
}

// vLLM's estimate multiplies a request's bytes (the sum over groups of each spec's bound) and a
// block's bytes (page × layers per group) by the layers per group; the factor cancels, leaving
// blocks per request = Σ over groups of the blocks that group's spec may hold for one request.
BlocksPerRequest blocks_per_request(const KVCacheConfig& kv_cache_config,
                                    const EngineConfig& config) {
  BlocksPerRequest blocks;
  const auto& groups = kv_cache_config.kv_cache_groups;
  if (groups.empty()) return blocks;
  // Blocks, not bytes, are summed: a page is at least one byte, so the sum stays below
  // groups × max_model_len where a sum of bytes could pass 64 bits.
  const std::int64_t page = positive_page_size(groups.front().kv_cache_spec);
  for (const auto& group : groups) {
    const std::int64_t bytes = group.kv_cache_spec.max_memory_usage_bytes(config);
    const auto group_blocks =
        static_cast<std::uint64_t>(bytes / page + (bytes % page != 0 ? 1 : 0));
    std::uint64_t& sum = group.kv_cache_spec.is_state() ? blocks.state : blocks.attention;
    sum = checked_add(sum, group_blocks, "KV cache blocks per request");
  }
  (void)checked_add(blocks.attention, blocks.state, "KV cache blocks per request");
  return blocks;
}

// A request holds at least one block, so the estimate stays finite.
double max_concurrency(const KVCacheConfig& kv_cache_config, const EngineConfig& config) {
  if (kv_cache_config.kv_cache_groups.empty()) return 0.0;
  const std::uint64_t blocks =
      std::max<std::uint64_t>(1, blocks_per_request(kv_cache_config, config).total());
  return static_cast<double>(kv_cache_config.num_blocks) / static_cast<double>(blocks);
}

std::int64_t tokens_capacity(const KVCacheConfig& kv_cache_config) {
  int block_size = 0;
  for (const auto& group : kv_cache_config.kv_cache_groups) {
    if (group.kv_cache_spec.is_state()) continue;  // one request's state per block, not tokens
    const int size = group.kv_cache_spec.block_size;
    block_size = block_size == 0 ? size : std::min(block_size, size);
  }
  return kv_cache_config.num_blocks * block_size;
}

}  // namespace attnrt
