#pragma once
// KV-sharing bookkeeping (SEMANTICS §3.4, §7.5): which layers read another layer's cache, and
// their registration in the KV cache group of their target.

#include <string>
#include <utility>
#include <vector>

#include "attnrt/attention/forward_context.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_config.h"

namespace attnrt {

using SharedKVCacheLayers = std::vector<std::pair<std::string, std::string>>;  // layer → target

// Every KV-sharing layer with its target, in execution order.
ATTNRT_API SharedKVCacheLayers get_shared_kv_cache_layers(const ForwardContext& forward_context);

// Appends each sharing layer to its target's group, in mapping order. Not idempotent (as in vLLM):
// call it once per plan. Throws Error, before changing anything, if a target is in no group.
ATTNRT_API void add_kv_sharing_layers_to_kv_cache_groups(
    const SharedKVCacheLayers& shared, std::vector<KVCacheGroupSpec>& kv_cache_groups);

}  // namespace attnrt
