#include "attnrt/attention/forward_context.h"

#include "attnrt/core/error.h"

namespace attnrt {

ForwardContext ForwardContext::from_config(const EngineConfig& config,
                                           const BackendRegistry* registry) {
  ForwardContext context;
  for (const LayerConfig& layer_config : config.model.layers) {
    AttentionLayer layer(layer_config, config.parallel.tensor_parallel_size);
    if (registry != nullptr) {
      AttentionBackendPtr backend = registry->resolve(layer_config.backend);
      if (!backend->supports_spec_kind(spec_kind_of(layer.type()))) {
        fail(
            "layer {}: backend {} does not serve {} attention; choose a backend that does in "
            "model.layers[].backend",
            layer.name(), backend->name(), attention_type_name(layer.type()));
      }
      layer.set_attn_backend(std::move(backend));
    }
    context.add(std::move(layer));
  }
  return context;
}

void ForwardContext::add(AttentionLayer layer) {
  if (index_.contains(layer.name())) {
    fail("layer {} is registered twice in the forward context; layer names must be unique",
         layer.name());
  }
  index_.emplace(layer.name(), layers_.size());
  layers_.push_back(std::move(layer));
}

AttentionLayer* ForwardContext::find(std::string_view name) {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &layers_[it->second];
}

const AttentionLayer* ForwardContext::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &layers_[it->second];
}

AttentionLayer& ForwardContext::at(std::string_view name) {
  if (AttentionLayer* layer = find(name)) return *layer;
  fail("layer {} is not an attention layer of the forward context", name);
}

const AttentionLayer& ForwardContext::at(std::string_view name) const {
  if (const AttentionLayer* layer = find(name)) return *layer;
  fail("layer {} is not an attention layer of the forward context", name);
}

LayerSpecs get_kv_cache_spec(const ForwardContext& forward_context, const CacheConfig& cache) {
  LayerSpecs specs;
  for (const AttentionLayer& layer : forward_context.layers()) {
    if (auto spec = layer.get_kv_cache_spec(cache)) specs.emplace_back(layer.name(), *spec);
  }
  return specs;
}

}  // namespace attnrt
