#pragma once
// BoundKVCache: a config's attention plan with its KV cache allocated and bound to every layer,
// as attnrt.KVCache holds it and PagedAttentionWrapper runs on it. Layers that share KV read
// their target's view.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attention_plan.h"
#include "loaded_model.h"

namespace attnrt::python {

class BoundKVCache {
 public:
  // `memory` replaces cache.memory when given. Throws Error for a config that cannot be planned.
  BoundKVCache(const PyConfigPtr& loaded, std::optional<std::uint64_t> memory);

  std::vector<std::string> layers() const;  // layers with a view, in execution order
  // Throws Error naming the layer and pointing at `layers` when it has no view.
  const AttentionLayer& layer(const std::string& name) const;
  const Tensor& view(const std::string& name) const { return layer(name).kv_cache(); }

  const EngineConfig& config() const { return config_; }
  AttentionPlan& plan() { return plan_; }
  const AttentionPlan& plan() const { return plan_; }
  std::int64_t num_blocks() const { return allocation_.num_blocks; }
  std::uint64_t backing_bytes() const { return plan_.kv.kv_cache_config.backing_bytes(); }
  std::uintptr_t backing_address() const {
    return reinterpret_cast<std::uintptr_t>(allocation_.backing->data());
  }

 private:
  EngineConfig config_;
  AttentionPlan plan_;
  KVCacheAllocation allocation_;
};

}  // namespace attnrt::python
