#pragma once
// A small model for the per-step tests, run on the CPU reference backend: config → KV cache plan
// → init_attn_backend → allocation and binding, plus helpers that write K/V through a slot
// mapping and run one layer's attention on given metadata. Activations are a fixed function of
// (request, position), so two runs of one batch see the same keys whatever the cache geometry.

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/backend_registry.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/kv/kv_cache_views.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/kv_cache_plan.h"

namespace attnrt::step_testing {

// CPU_REFERENCE restricted to one kernel block size, so that larger manager blocks split.
class SplitReferenceBackend : public CpuReferenceBackend {
 public:
  explicit SplitReferenceBackend(int kernel_block_size) : kernel_block_size_(kernel_block_size) {}
  std::string name() const override {
    return "CPU_REFERENCE_K" + std::to_string(kernel_block_size_);
  }
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(const KVCacheSpec&) const override {
    return {kernel_block_size_};
  }

 private:
  int kernel_block_size_;
};

// `num_layers` full-attention layers (2 query heads, 1 KV head, head size 4, f32 cache); the
// last `num_sharing` share the KV cache of layer num_layers - num_sharing - 1.
inline EngineConfig small_config(int num_layers, int num_sharing, int block_size,
                                 const std::string& layout) {
  EngineConfig config;
  config.model.max_model_len = 256;
  for (int i = 0; i < num_layers; ++i) {
    LayerConfig layer;
    layer.name = "layer" + std::to_string(i);
    layer.num_heads = 2;
    layer.num_kv_heads = 1;
    layer.head_size = 4;
    layer.head_size_v = 4;
    if (i >= num_layers - num_sharing) {
      layer.kv_sharing_target = "layer" + std::to_string(num_layers - num_sharing - 1);
    }
    config.model.layers.push_back(layer);
  }
  config.cache.block_size = block_size;
  config.cache.dtype = DType::f32;
  config.cache.layout = parse_kv_cache_layout(layout);
  config.cache.memory = 64 << 10;
  config.scheduler.max_num_seqs = 8;
  config.scheduler.max_num_batched_tokens = 64;
  return config;
}

// Planned, initialised, allocated and bound. Not movable: builders keep a reference to `config`.
struct StepModel {
  StepModel(EngineConfig engine_config, AttentionBackendPtr backend, bool maps_slot_mapping)
      : config(std::move(engine_config)) {
    BackendRegistry registry;
    registry.add(backend);
    registry.set_default(backend->name());
    plan = plan_kv_cache(config, {}, &registry);
    InitAttnBackendOptions options;
    options.maps_slot_mapping = maps_slot_mapping;
    attn = init_attn_backend(plan.kv_cache_config, config, plan.forward_context, Device::cpu(),
                             options);
    cache = allocate_kv_cache(plan.kv_cache_config, Device::cpu(), attn.kernel_block_sizes);
    bind_kv_caches(cache.views, plan.forward_context, plan.kv_cache_config, config,
                   attn.attn_groups);
  }
  StepModel(const StepModel&) = delete;
  StepModel& operator=(const StepModel&) = delete;

  const AttentionLayer& layer(const std::string& name) const {
    return plan.forward_context.at(name);
  }

  EngineConfig config;
  KVCachePlan plan;
  InitAttnBackendResult attn;
  KVCacheAllocation cache;
};

// Rows [num_rows][num_heads][size] of a fixed, smooth function of (row key, head, entry).
inline std::vector<float> activation_rows(std::span<const int> row_keys, int num_heads, int size,
                                          int salt) {
  std::vector<float> rows;
  for (const int key : row_keys) {
    for (int h = 0; h < num_heads; ++h) {
      for (int i = 0; i < size; ++i) {
        rows.push_back(std::sin(0.37f * static_cast<float>(key) + 1.3f * static_cast<float>(h) +
                                0.71f * static_cast<float>(i) + static_cast<float>(salt)));
      }
    }
  }
  return rows;
}

inline ActivationView rows_view(std::vector<float>& rows, int num_heads, int size) {
  const int num_rows = static_cast<int>(rows.size()) / (num_heads * size);
  return ActivationView{rows.data(), num_rows, num_heads, size, num_heads * size, size};
}

// Writes the keys and values of `row_keys` through `slot_mapping` into the layer's cache.
inline void write_kv(const AttentionLayer& layer, std::span<const int> row_keys,
                     std::span<const std::int64_t> slot_mapping) {
  const AttentionShape shape = layer.attention_shape();
  std::vector<float> keys = activation_rows(row_keys, shape.num_kv_heads, shape.head_size, 1);
  std::vector<float> values = activation_rows(row_keys, shape.num_kv_heads, shape.head_size_v, 2);
  layer.get_attn_backend()->write_kv({shape, rows_view(keys, shape.num_kv_heads, shape.head_size),
                                      rows_view(values, shape.num_kv_heads, shape.head_size_v),
                                      slot_mapping, layer.kv_cache()});
}

// The layer's attention output for queries of `row_keys` under `metadata`.
inline std::vector<float> run_attention(const AttentionLayer& layer,
                                        const AttentionMetadata& metadata,
                                        std::span<const int> row_keys) {
  const AttentionShape shape = layer.attention_shape();
  std::vector<float> query = activation_rows(row_keys, shape.num_heads, shape.head_size, 3);
  std::vector<float> output(row_keys.size() * shape.num_heads * shape.head_size_v, -7.f);
  layer.get_attn_backend()->forward({shape, rows_view(query, shape.num_heads, shape.head_size),
                                     rows_view(output, shape.num_heads, shape.head_size_v),
                                     layer.kv_cache(), metadata});
  return output;
}

}  // namespace attnrt::step_testing
