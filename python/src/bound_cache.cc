#include "bound_cache.h"

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/core/error.h"
#include "attnrt/runner/attn_utils.h"

namespace attnrt::python {
namespace {

EngineConfig with_memory(EngineConfig config, std::optional<std::uint64_t> memory) {
  if (memory) config.cache.memory = *memory;
  validate_config(config);
  return config;
}

}  // namespace

BoundKVCache::BoundKVCache(const PyConfigPtr& loaded, std::optional<std::uint64_t> memory)
    : config_(with_memory(loaded->config, memory)),
      plan_(plan_attention(config_, backend_registry_for(config_))),
      allocation_(allocate_kv_cache(plan_.kv.kv_cache_config, Device::cpu(),
                                    plan_.backends.kernel_block_sizes)) {
  bind_kv_caches(allocation_.views, plan_.kv.forward_context, plan_.kv.kv_cache_config, config_,
                 plan_.backends.attn_groups);
}

std::vector<std::string> BoundKVCache::layers() const {
  std::vector<std::string> names;
  for (const AttentionLayer& layer : plan_.kv.forward_context.layers()) {
    if (layer.has_kv_cache()) names.push_back(layer.name());
  }
  return names;
}

const AttentionLayer& BoundKVCache::layer(const std::string& name) const {
  const AttentionLayer* layer = plan_.kv.forward_context.find(name);
  if (layer == nullptr || !layer->has_kv_cache()) {
    throw Error("KVCache: layer '" + name + "' has no KV cache view; see KVCache.layers");
  }
  return *layer;
}

}  // namespace attnrt::python
