#include "attnrt/config/engine_config.h"

#include <algorithm>

namespace attnrt {

std::string_view attention_type_name(AttentionType type) {
  return kAttentionTypeNames.at(static_cast<std::size_t>(type));
}

MambaCacheMode effective_mamba_cache_mode(const CacheConfig& cache) {
  if (!cache.enable_prefix_caching) return MambaCacheMode::none;
  return cache.mamba_cache_mode == MambaCacheMode::none ? MambaCacheMode::align
                                                        : cache.mamba_cache_mode;
}

std::string_view mamba_cache_mode_name(MambaCacheMode mode) {
  return kMambaCacheModeNames.at(static_cast<std::size_t>(mode));
}

bool is_state_layer_type(AttentionType type) {
  return type == AttentionType::mamba || type == AttentionType::linear_attention;
}

const LayerConfig* EngineConfig::find_layer(std::string_view name) const {
  const auto it = std::find_if(model.layers.begin(), model.layers.end(),
                               [name](const LayerConfig& layer) { return layer.name == name; });
  return it == model.layers.end() ? nullptr : &*it;
}

}  // namespace attnrt
