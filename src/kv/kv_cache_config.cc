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

}  // namespace attnrt
