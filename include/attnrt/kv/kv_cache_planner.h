#pragma once
// From per-layer specs and a byte budget to a KVCacheConfig (SEMANTICS §4.3): equal specs form one
// group; otherwise page sizes are unified (smaller pages get proportionally larger blocks) and
// layers are grouped by spec, big buckets split round-robin; then the budget decides num_blocks.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_config.h"

namespace attnrt {

using LayerSpecs = std::vector<std::pair<std::string, KVCacheSpec>>;  // execution order

// Groups the layers that own a KV cache. Encoder-only specs form no group.
ATTNRT_API std::vector<KVCacheGroupSpec> get_kv_cache_groups(const LayerSpecs& specs);

// Blocks that fit `available_memory` bytes, and one KVCacheTensor per group laid out in `layout`.
// Throws Error when the budget holds no block for every layer, naming the budget and the need.
ATTNRT_API KVCacheConfig get_kv_cache_config_from_groups(std::vector<KVCacheGroupSpec> groups,
                                                         std::uint64_t available_memory,
                                                         KVCacheLayout layout);

// Bytes one block id takes in the shared backing: the common page × the most layers of a group
// (0 for no groups). vLLM divides the budget by this, and multiplies num_gpu_blocks_override by it.
ATTNRT_API std::uint64_t kv_cache_bytes_per_block(const std::vector<KVCacheGroupSpec>& groups);

// The bytes `cache` gives the KV cache: cache.memory, or num_gpu_blocks_override whole blocks.
ATTNRT_API std::uint64_t kv_cache_budget(const std::vector<KVCacheGroupSpec>& groups,
                                         const CacheConfig& cache);

// The blocks one request of `max_model_len` tokens may hold, summed over the groups: those of
// attention groups (they grow with the tokens) and those of state groups (a fixed number each).
struct BlocksPerRequest {
  std::uint64_t attention = 0;
  std::uint64_t state = 0;
  std::uint64_t total() const { return attention + state; }
  // Which of the two takes more of a request's blocks: "state blocks" or "tokens".
  std::string_view limited_by() const { return state > attention ? "state blocks" : "tokens"; }
};
ATTNRT_API BlocksPerRequest blocks_per_request(const KVCacheConfig& kv_cache_config,
                                               const EngineConfig& config);

// How many requests of `max_model_len` tokens fit at once (vLLM's max concurrency estimate):
// num_blocks / blocks_per_request().total().
ATTNRT_API double max_concurrency(const KVCacheConfig& kv_cache_config, const EngineConfig& config);

// Tokens the cache can hold per attention layer: num_blocks × the smallest block size of an
// attention group (0 when only state layers own a cache).
ATTNRT_API std::int64_t tokens_capacity(const KVCacheConfig& kv_cache_config);

}  // namespace attnrt
