#include "attnrt/attention/forward_context.h"

#include <optional>
#include <set>

#include "core/fail.h"

namespace attnrt {

ForwardContext ForwardContext::from_config(const EngineConfig& config,
                                           const BackendRegistry* registry) {
  ForwardContext context;
  context.reserve(config.model.layers.size());
  std::set<const AttentionBackend*> layout_checked;  // the layout check depends on the backend
  const std::vector<LayerConfig>& layers = config.model.layers;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    std::optional<AttentionLayer> built;
    try {
      built.emplace(layers[i], config.parallel.tensor_parallel_size,
                    config.speculative.num_speculative_tokens);
    } catch (const Error& error) {
      fail("model.layers[{}]: {}", i, error.what());  // a state that does not divide, say
    }
    AttentionLayer& layer = *built;
    // State layers take no attention backend (SEMANTICS §4.4), and neither do encoder-only
    // layers: they keep no KV cache, so no cache group or metadata builder serves them.
    if (registry != nullptr && !layer.is_state_layer() &&
        layer.type() != AttentionType::encoder_only) {
      AttentionBackendPtr backend;
      try {
        backend = registry->resolve(layers[i].backend);
        check_backend_serves_layer(layer, *backend);
      } catch (const Error& error) {
        fail("model.layers[{}].backend: {}", i, error.what());  // the culprit, as the config has it
      }
      if (layout_checked.insert(backend.get()).second) {
        check_backend_layout(layer, *backend, config.cache.layout, config.backends);
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

void ForwardContext::reserve(std::size_t num_layers) {
  layers_.reserve(num_layers);
  index_.reserve(num_layers);
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
