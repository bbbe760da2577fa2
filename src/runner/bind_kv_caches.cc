#include "attnrt/runner/attn_utils.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// A view must fit the layer it is bound to: same element type, head slots and K+V content.
void check_view_fits_layer(const AttentionLayer& layer, const Tensor& view,
                           const CacheConfig& cache) {
  std::optional<KVCacheSpec> spec = layer.get_kv_cache_spec(cache);
  if (!spec) return;  // sharing layers are checked through their target
  const std::int64_t content =
      spec->state_content_size_bytes() / static_cast<std::int64_t>(dtype_size(spec->dtype));
  if (view.dim() != 4 || view.dtype() != spec->dtype || view.size(1) != spec->num_heads() ||
      view.size(3) != content) {
    fail(
        "layer {}: KV cache view {} does not fit its spec {} (expected {}[blocks, {}, states, "
        "{}]); bind the view planned for this layer",
        layer.name(), view.describe(), spec->describe(), dtype_name(spec->dtype), spec->num_heads(),
        content);
  }
}

}  // namespace

void bind_kv_caches(std::map<std::string, Tensor>& kv_caches, ForwardContext& forward_context,
                    const KVCacheConfig& kv_cache_config, const EngineConfig& config,
                    std::span<const std::vector<AttentionGroup>> attn_groups) {
  (void)kv_cache_config;  // kept for the reference signature; groups come through attn_groups
  // Stage every change first so that an error leaves the map and the layers untouched.
  std::map<std::string, Tensor> aliases;
  for (const AttentionLayer& layer : forward_context.layers()) {
    if (!layer.shares_kv()) continue;
    auto target = kv_caches.find(layer.kv_sharing_target());
    if (target == kv_caches.end()) {
      fail(
          "layer {} shares the KV cache of {}, but {} has no KV cache view; allocate the target's "
          "cache before binding",
          layer.name(), layer.kv_sharing_target(), layer.kv_sharing_target());
    }
    aliases[layer.name()] = target->second;
  }
  auto view_of = [&](const std::string& name) -> const Tensor* {
    if (auto it = aliases.find(name); it != aliases.end()) return &it->second;
    if (auto it = kv_caches.find(name); it != kv_caches.end()) return &it->second;
    return nullptr;
  };
  for (const AttentionLayer& layer : forward_context.layers()) {
    const Tensor* view = view_of(layer.name());
    if (view == nullptr) {
      if (layer.get_kv_cache_spec(config.cache)) {
        fail(
            "layer {} owns a KV cache but no view was allocated for it; allocate the cache from "
            "a KVCacheConfig planned for this model",
            layer.name());
      }
      continue;
    }
    check_view_fits_layer(layer, *view, config.cache);
  }
  for (const std::vector<AttentionGroup>& groups : attn_groups) {
    for (const AttentionGroup& group : groups) {
      for (const std::string& name : group.layer_names) {
        if (!forward_context.contains(name) || view_of(name) == nullptr) {
          fail(
              "attention group of KV cache group {} names layer {}, which would stay unbound; "
              "every layer of an attention group needs a KV cache view",
              group.kv_cache_group_id, name);
        }
      }
    }
  }

  for (auto& [name, view] : aliases) kv_caches[name] = view;
  for (AttentionLayer& layer : forward_context.layers()) {
    if (auto it = kv_caches.find(layer.name()); it != kv_caches.end()) {
      layer.bind_kv_cache(it->second);
    }
  }
}

}  // namespace attnrt
