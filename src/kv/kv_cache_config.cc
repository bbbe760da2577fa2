// KVCacheConfig lookups (SEMANTICS §4.2).

#include "attnrt/kv/kv_cache_config.h"

#include <algorithm>

namespace attnrt {

int KVCacheConfig::group_of(std::string_view layer) const {
  for (std::size_t id = 0; id < kv_cache_groups.size(); ++id) {
    const auto& names = kv_cache_groups[id].layer_names;
    if (std::find(names.begin(), names.end(), layer) != names.end()) return static_cast<int>(id);
  }
  return -1;
}

KVCacheGroupIndex::KVCacheGroupIndex(std::span<const KVCacheGroupSpec> groups) {
  std::size_t num_layers = 0;
  for (const KVCacheGroupSpec& group : groups) num_layers += group.layer_names.size();
  group_of_layer_.reserve(num_layers);
  for (std::size_t id = 0; id < groups.size(); ++id) {
    // emplace keeps the first group of a layer listed twice, as group_of's scan does.
    for (const std::string& name : groups[id].layer_names) {
      group_of_layer_.emplace(name, static_cast<int>(id));
    }
  }
}

int KVCacheGroupIndex::group_of(std::string_view layer) const {
  const auto it = group_of_layer_.find(layer);
  return it == group_of_layer_.end() ? -1 : it->second;
}

}  // namespace attnrt
