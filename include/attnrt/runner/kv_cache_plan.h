#pragma once
// The KV cache plan of a config: layers → specs → groups → blocks for the budget → where every
// layer's view lives. Computed without allocating, so a 24 GiB plan costs nothing; `attnrt plan`
// prints it and an engine allocates it with allocate_kv_cache.

#include <optional>
#include <vector>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/attention/forward_context.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/hybrid_block_size.h"
#include "attnrt/kv/kv_cache_capacity.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/kv_sharing.h"

namespace attnrt {

struct KVCachePlan {
  ForwardContext forward_context;  // per-rank layers, execution order
  LayerSpecs layer_specs;          // layers that own a cache
  // Set when attention and state layers share the pool: the block size before and after
  // alignment and the state page's padding (SEMANTICS §4.4).
  std::optional<HybridBlockSize> hybrid_block_size;
  int attention_block_size = 0;          // cache.block_size, or the aligned size of a hybrid model
  SharedKVCacheLayers shared_layers;     // layer → target
  KVCacheConfig kv_cache_config;         // groups include the sharing layers of their targets
  std::vector<LayerViewGeometry> views;  // one per owning layer
  KVCacheCapacity capacity;              // does one request of max_model_len fit? (vLLM's check)
};

// Plans for `config.cache.memory` bytes per rank in `config.cache.layout`. `kernel_block_sizes`
// (one per group, or empty) splits manager blocks for the views. With a registry, the forward
// context's layers get their backends.
ATTNRT_API KVCachePlan plan_kv_cache(const EngineConfig& config,
                                     std::span<const int> kernel_block_sizes = {},
                                     const BackendRegistry* registry = nullptr);
// The same without the views (`views` stays empty), for a caller that plans them once it knows
// the kernel block sizes.
ATTNRT_API KVCachePlan plan_kv_cache_without_views(const EngineConfig& config,
                                                   const BackendRegistry* registry = nullptr);

}  // namespace attnrt
