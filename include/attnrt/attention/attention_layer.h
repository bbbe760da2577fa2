#pragma once
// AttentionLayer: one attention module of the model as the runtime sees it on this rank — its
// per-rank head counts, attention type, KV-sharing target, and the KV cache view bound to it.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/config/kv_cache_layout.h"
#include "attnrt/core/export.h"
#include "attnrt/core/tensor.h"
#include "attnrt/kv/kv_cache_spec.h"
#include "attnrt/kv/state_views.h"

namespace attnrt {

class AttentionLayer;

// Throws Error naming the layer and the backend unless `backend` serves the layer's attention type
// and runs its K and V head sizes.
ATTNRT_API void check_backend_serves_layer(const AttentionLayer& layer,
                                           const AttentionBackend& backend);
// Throws Error unless caches in `layout` are ones `backend` reads (an empty list: any). `layer`
// is the first layer using it; `profiles` (the config's `backends`) lets the message name the
// JSON path of a config profile's kv_cache_layouts.
ATTNRT_API void check_backend_layout(const AttentionLayer& layer, const AttentionBackend& backend,
                                     KVCacheLayout layout,
                                     std::span<const BackendProfileConfig> profiles);

class ATTNRT_API AttentionLayer {
 public:
  // `layer` holds whole-model head counts; the layer keeps this rank's share: query heads / T, KV
  // heads / T, or 1 (replicated) when there are fewer KV heads than ranks. A state layer keeps
  // this rank's state tensors, with rows for `num_speculative_tokens` drafts where its mixer has
  // them. Throws Error naming the layer when the heads or state do not divide among
  // `tensor_parallel_size` ranks.
  AttentionLayer(const LayerConfig& layer, int tensor_parallel_size = 1,
                 int num_speculative_tokens = 0);

  const std::string& name() const { return config_.name; }
  AttentionType type() const { return config_.type; }
  int num_heads() const { return config_.num_heads; }
  int num_kv_heads() const { return config_.num_kv_heads; }
  int head_size() const { return config_.head_size; }
  int head_size_v() const { return config_.head_size_v; }
  int sliding_window() const { return config_.sliding_window; }
  int attention_chunk_size() const { return config_.attention_chunk_size; }
  const std::string& kv_sharing_target() const { return config_.kv_sharing_target; }
  bool shares_kv() const { return config_.shares_kv(); }
  bool is_draft() const { return config_.draft; }
  bool is_state_layer() const { return config_.is_state_layer(); }
  // A state layer's per-request state on this rank (empty for attention layers).
  const std::vector<StateTensor>& state_tensors() const { return state_tensors_; }
  const std::string& backend_name() const { return config_.backend; }
  const LayerConfig& config() const { return config_; }  // per-rank values

  // The cache this layer owns, or nullopt: KV-sharing layers read their target's cache and
  // encoder-only layers keep none. A state layer's spec is unpadded at cache.block_size; the
  // planner aligns it with the attention pages (kv/hybrid_specs.h). Throws Error naming the layer
  // when its page does not fit.
  std::optional<KVCacheSpec> get_kv_cache_spec(const CacheConfig& cache) const;

  // The shape its kernels see (per rank).
  AttentionShape attention_shape() const;

  // The backend that runs this layer (chosen from the registry by the config's `backend`).
  void set_attn_backend(AttentionBackendPtr backend) { backend_ = std::move(backend); }
  bool has_attn_backend() const { return backend_ != nullptr; }
  // Throws Error naming the layer if no backend was assigned.
  const AttentionBackendPtr& get_attn_backend() const;

  void bind_kv_cache(Tensor view) { kv_cache_ = std::move(view); }
  bool has_kv_cache() const { return kv_cache_.defined(); }
  const Tensor& kv_cache() const { return kv_cache_; }
  // A state layer's state tensors over its bound page view, [blocks, state shape...] each (conv
  // state first). Throws Error unless this is a state layer with a bound view.
  std::vector<Tensor> state_views() const;

 private:
  std::optional<KVCacheSpec> make_kv_cache_spec(const CacheConfig& cache) const;

  LayerConfig config_;
  std::vector<StateTensor> state_tensors_;
  int num_speculative_tokens_ = 0;
  AttentionBackendPtr backend_;
  Tensor kv_cache_;
};

}  // namespace attnrt
