#include "attnrt/runner/kv_sharing.h"

#include <map>

#include "core/fail.h"

namespace attnrt {

SharedKVCacheLayers get_shared_kv_cache_layers(const ForwardContext& forward_context) {
  SharedKVCacheLayers shared;
  for (const AttentionLayer& layer : forward_context.layers()) {
    if (layer.shares_kv()) shared.emplace_back(layer.name(), layer.kv_sharing_target());
  }
  return shared;
}

void add_kv_sharing_layers_to_kv_cache_groups(const SharedKVCacheLayers& shared,
                                              std::vector<KVCacheGroupSpec>& kv_cache_groups) {
  if (shared.empty()) return;
  std::map<std::string, std::size_t, std::less<>> group_of_layer;
  for (std::size_t g = 0; g < kv_cache_groups.size(); ++g) {
    for (const std::string& name : kv_cache_groups[g].layer_names) group_of_layer[name] = g;
  }
  std::vector<std::size_t> target_groups;
  for (const auto& [layer, target] : shared) {
    auto it = group_of_layer.find(target);
    if (it == group_of_layer.end()) {
      fail(
          "layer {} shares the KV cache of {}, which is in no KV cache group; the target must be "
          "a layer that owns a KV cache",
          layer, target);
    }
    target_groups.push_back(it->second);
  }
  for (std::size_t i = 0; i < shared.size(); ++i) {
    kv_cache_groups[target_groups[i]].layer_names.push_back(shared[i].first);
  }
}

}  // namespace attnrt
