#include "attnrt/attention/attention_layer.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "core/fail.h"

namespace attnrt {
namespace {

// This rank's share of the KV heads (vLLM: divided when there are at least as many KV heads as
// ranks, otherwise each rank keeps a replica of one head).
int kv_heads_per_rank(const LayerConfig& layer, int tp) {
  if (layer.type == AttentionType::mla) return 1;  // the latent vector is replicated
  if (layer.num_kv_heads >= tp) {
    if (layer.num_kv_heads % tp != 0) {
      fail(
          "layer {}: {} KV heads do not divide among {} tensor-parallel ranks; use a "
          "tensor_parallel_size that divides {}",
          layer.name, layer.num_kv_heads, tp, layer.num_kv_heads);
    }
    return layer.num_kv_heads / tp;
  }
  if (tp % layer.num_kv_heads != 0) {
    fail(
        "layer {}: {} tensor-parallel ranks cannot replicate {} KV heads evenly; use a "
        "tensor_parallel_size that is a multiple of {}",
        layer.name, tp, layer.num_kv_heads, layer.num_kv_heads);
  }
  return 1;
}

}  // namespace

void check_backend_serves_layer(const AttentionLayer& layer, const AttentionBackend& backend) {
  if (!backend.supports_spec_kind(layer.type())) {
    fail("layer {}: backend {} does not serve {} attention; choose a backend that does",
         layer.name(), backend.name(), attention_type_name(layer.type()));
  }
  // MLA's value width is part of the latent, but the kernels size their tiles by it too.
  for (const int head_size : {layer.head_size(), layer.head_size_v()}) {
    if (head_size <= 0 || backend.supports_head_size(head_size)) continue;
    fail(
        "layer {}: backend {} cannot run head size {} (head_size {}, head_size_v {}); choose a "
        "backend whose kernels take it",
        layer.name(), backend.name(), head_size, layer.head_size(), layer.head_size_v());
  }
}

void check_backend_layout(const AttentionLayer& layer, const AttentionBackend& backend,
                          KVCacheLayout layout, std::span<const BackendProfileConfig> profiles) {
  const std::vector<KVCacheLayout> layouts = backend.supported_kv_cache_layouts();
  if (layouts.empty() || std::ranges::find(layouts, layout) != layouts.end()) return;
  const auto profile = std::ranges::find(profiles, backend.name(), &BackendProfileConfig::name);
  if (profile != profiles.end()) {
    fail(
        "layer {}: backends[{}].kv_cache_layouts of profile {} ({}) excludes cache.layout {}; "
        "add {} to it, choose a cache.layout it lists, or give the layer another backend",
        layer.name(), profile - profiles.begin(), backend.name(), layout_names(layouts),
        layout_name(layout), layout_name(layout));
  }
  fail(
      "layer {}: backend {} reads KV caches in the layouts {} only, but cache.layout is {}; "
      "choose one of them as cache.layout, or give the layer another backend",
      layer.name(), backend.name(), layout_names(layouts), layout_name(layout));
}

AttentionLayer::AttentionLayer(const LayerConfig& layer, int tensor_parallel_size,
                               int num_speculative_tokens)
    : config_(layer), num_speculative_tokens_(num_speculative_tokens) {
  const int tp = tensor_parallel_size;
  if (tp < 1) fail("layer {}: tensor_parallel_size must be at least 1, got {}", layer.name, tp);
  if (layer.is_state_layer()) {
    if (!layer.state) {
      fail("layer {}: a {} layer needs its state", layer.name, attention_type_name(layer.type));
    }
    try {
      state_tensors_ = attnrt::state_tensors(*layer.state, tp, num_speculative_tokens);
    } catch (const Error& error) {
      fail("layer {}: {}", layer.name, error.what());
    }
    return;
  }
  if (layer.num_heads <= 0 || layer.num_kv_heads <= 0 || layer.head_size <= 0) {
    fail("layer {}: num_heads ({}), num_kv_heads ({}) and head_size ({}) must be positive",
         layer.name, layer.num_heads, layer.num_kv_heads, layer.head_size);
  }
  if (layer.num_heads % tp != 0) {
    fail("layer {}: {} query heads do not divide among {} tensor-parallel ranks", layer.name,
         layer.num_heads, tp);
  }
  config_.num_heads = layer.num_heads / tp;
  config_.num_kv_heads = kv_heads_per_rank(layer, tp);
  if (config_.head_size_v == 0 && config_.type != AttentionType::mla) {
    config_.head_size_v = config_.head_size;
  }
}

AttentionShape AttentionLayer::attention_shape() const {
  return AttentionShape{
      config_.type,        config_.num_heads,      config_.num_kv_heads,         config_.head_size,
      config_.head_size_v, config_.sliding_window, config_.attention_chunk_size, 0.f};
}

const AttentionBackendPtr& AttentionLayer::get_attn_backend() const {
  if (!backend_) {
    fail("layer {} has no attention backend; build the forward context with a backend registry",
         name());
  }
  return backend_;
}

std::vector<Tensor> AttentionLayer::state_views() const {
  if (!is_state_layer()) fail("layer {} is an attention layer and keeps no state", name());
  if (!has_kv_cache()) fail("layer {} has no bound KV cache view; bind the plan's views", name());
  try {
    return split_state_page_view(kv_cache_, state_tensors_);
  } catch (const Error& error) {
    fail("layer {}: {}", name(), error.what());
  }
}

std::optional<KVCacheSpec> AttentionLayer::get_kv_cache_spec(const CacheConfig& cache) const {
  if (shares_kv()) return std::nullopt;  // reads the target's cache
  try {
    return make_kv_cache_spec(cache);
  } catch (const Error& error) {
    fail("layer {}: {}", name(), error.what());  // the spec cannot name the layer itself
  }
}

std::optional<KVCacheSpec> AttentionLayer::make_kv_cache_spec(const CacheConfig& cache) const {
  const int block = cache.block_size;
  const int kv = config_.num_kv_heads;
  const int hs = config_.head_size;
  const int hv = config_.head_size_v;
  switch (config_.type) {
    case AttentionType::mamba:
    case AttentionType::linear_attention:
      return KVCacheSpec::state(config_.type, block, state_tensors_, num_speculative_tokens_);
    case AttentionType::full:
      return KVCacheSpec::full(block, kv, hs, cache.dtype, hv);
    case AttentionType::sliding_window:
      return KVCacheSpec::sliding(block, kv, hs, cache.dtype, config_.sliding_window, hv);
    case AttentionType::chunked_local:
      return KVCacheSpec::chunked_local(block, kv, hs, cache.dtype, config_.attention_chunk_size,
                                        hv);
    case AttentionType::mla:
      return KVCacheSpec::mla(block, hs, cache.dtype);
    case AttentionType::cross:
      return KVCacheSpec::cross(block, kv, hs, cache.dtype, hv);
    case AttentionType::encoder_only:
      return std::nullopt;  // attends within the batch; keeps no cache
  }
  return std::nullopt;
}

}  // namespace attnrt
