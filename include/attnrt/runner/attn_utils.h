#pragma once
// attnrt's counterpart of vLLM's model-runner module `attn_utils` (reference page:
// spec/attn_utils_reference.txt). Names and parameters follow the page in C++ form.

#include <map>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/forward_context.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/tensor.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/runner/attention_group.h"

namespace attnrt {

// Binds per-layer KV cache views to the attention layers (SEMANTICS §0): every KV-sharing layer's
// entry becomes its target's view, then each layer of the forward context with an entry is bound
// in execution order. Entries for names outside the context stay in the map, unbound. When
// `attn_groups` is given, every layer they name must end up bound. Validates everything before
// changing anything: on error neither the map nor any layer is modified.
void bind_kv_caches(std::map<std::string, Tensor>& kv_caches, ForwardContext& forward_context,
                    const KVCacheConfig& kv_cache_config, const EngineConfig& config,
                    std::span<const std::vector<AttentionGroup>> attn_groups = {});

}  // namespace attnrt
