#pragma once
// ForwardContext: the model's attention layers in execution order, looked up by name.

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attnrt/attention/attention_layer.h"
#include "attnrt/attention/backend_registry.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kv_cache_planner.h"

namespace attnrt {

class ATTNRT_API ForwardContext {
 public:
  ForwardContext() = default;
  // One layer per config layer, per-rank (tensor parallelism applied). With a registry, each
  // layer gets the backend its config names (or the registry's default); Error if that backend
  // is unknown or cannot serve the layer's attention type.
  static ForwardContext from_config(const EngineConfig& config,
                                    const BackendRegistry* registry = nullptr);

  // Appends a layer; throws Error if its name is taken.
  void add(AttentionLayer layer);
  // Room for `num_layers` layers without reallocating (a 100 000-layer model builds one context).
  void reserve(std::size_t num_layers);

  std::span<AttentionLayer> layers() { return layers_; }
  std::span<const AttentionLayer> layers() const { return layers_; }
  std::size_t size() const { return layers_.size(); }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  AttentionLayer* find(std::string_view name);
  const AttentionLayer* find(std::string_view name) const;
  // Throws Error naming the layer when it is not in the context.
  AttentionLayer& at(std::string_view name);
  const AttentionLayer& at(std::string_view name) const;

 private:
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };

  std::vector<AttentionLayer> layers_;
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> index_;
};

// Every layer that owns a cache with its spec, in execution order (SEMANTICS §4.3).
ATTNRT_API LayerSpecs get_kv_cache_spec(const ForwardContext& forward_context,
                                        const CacheConfig& cache);

}  // namespace attnrt
