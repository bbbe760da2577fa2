#pragma once
// The KV-sharing fast-prefill wrapper backend (SEMANTICS §6.2): the trailing KV-sharing layers
// run attention on the logits rows only. It wraps the layer's own backend: same capabilities and
// kernels, named "FastPrefill" + name(), and its builder rewrites each step's metadata to those
// rows before the wrapped builder sees it. Wrappers of one backend share one grouping key, so
// all of its fast-prefill layers fall into one attention group.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/core/export.h"

namespace attnrt {

inline constexpr std::string_view kFastPrefillPrefix = "FastPrefill";

// The metadata of the logits rows (SEMANTICS §6.2). A pure-decode step (max_query_len == 1) is
// returned unchanged. Otherwise each request's query becomes its logits rows: the new
// query_start_loc is written to `query_start_loc_out` (num_reqs + 1 entries; host memory, used as
// both the device and host copy), num_actual_tokens = num_logits_indices, max_query_len =
// max_logits_per_req, causal; seq_lens, block table, slot mapping and the logits fields are kept
// (the wrapped builder's metadata then carries the logits fields, as vLLM's result wrapper does),
// positions and encoder lengths are dropped. Throws Error when the logits fields are missing or
// a logits index lies outside the batch.
ATTNRT_API CommonAttentionMetadata make_kv_sharing_fast_prefill_common_attn_metadata(
    const CommonAttentionMetadata& common, std::span<std::int32_t> query_start_loc_out);

// Builds with the wrapped builder on the rewritten metadata; everything else is forwarded.
class ATTNRT_API FastPrefillMetadataBuilder : public AttentionMetadataBuilder {
 public:
  FastPrefillMetadataBuilder(std::unique_ptr<AttentionMetadataBuilder> wrapped,
                             const KVCacheSpec& kv_cache_spec, std::vector<std::string> layer_names,
                             const EngineConfig& config, Device device);

  AttentionCGSupport get_cudagraph_support(const EngineConfig& config,
                                           const KVCacheSpec& spec) const override;
  std::optional<int> get_varlen_cudagraph_max_query_len(const EngineConfig& config,
                                                        const KVCacheSpec& spec) const override;
  const AttentionMetadata& build(int common_prefix_len, const CommonAttentionMetadata& common,
                                 bool fast_build = false) override;
  const AttentionMetadata& build_for_cudagraph_capture(
      const CommonAttentionMetadata& common) override;

  std::shared_ptr<Buffer> provide_workspace(const EngineConfig& config) override;
  bool accepts_workspace() const override;
  void set_workspace_buffer(std::shared_ptr<Buffer> workspace) override;

  AttentionMetadataBuilder& wrapped() { return *wrapped_; }

 private:
  CommonAttentionMetadata rewrite(const CommonAttentionMetadata& common);

  std::unique_ptr<AttentionMetadataBuilder> wrapped_;
  std::vector<std::int32_t> query_start_loc_;  // persistent: the rewritten query_start_loc
};

class ATTNRT_API FastPrefillBackend : public AttentionBackend {
 public:
  // Throws Error if `wrapped` is null.
  explicit FastPrefillBackend(AttentionBackendPtr wrapped);

  std::string name() const override;       // "FastPrefill" + wrapped name
  std::string group_key() const override;  // "FastPrefill:" + wrapped group key
  bool supports_spec_kind(KVSpecKind kind) const override;
  bool supports_head_size(int head_size) const override;
  std::vector<KernelBlockSize> get_supported_kernel_block_sizes(
      const KVCacheSpec& spec) const override;
  std::vector<KVCacheLayout> supported_kv_cache_layouts() const override;
  bool supports_device_cpu_query_lens_mismatch() const override;
  bool supports_batch_invariance() const override;
  bool executable() const override;

  std::unique_ptr<AttentionMetadataBuilder> create_builder(const KVCacheSpec& kv_cache_spec,
                                                           std::vector<std::string> layer_names,
                                                           const EngineConfig& config,
                                                           Device device) const override;
  void write_kv(const KVWriteArgs& args) const override;
  void forward(const AttentionForwardArgs& args) const override;

  const AttentionBackendPtr& wrapped() const { return wrapped_; }

 private:
  AttentionBackendPtr wrapped_;
};

// vLLM's create_fast_prefill_custom_backend with the "FastPrefill" prefix.
ATTNRT_API AttentionBackendPtr create_fast_prefill_custom_backend(AttentionBackendPtr underlying);
// True for a FastPrefillBackend (the layers it serves take the fast-prefill path).
ATTNRT_API bool is_fast_prefill_backend(const AttentionBackend& backend);

}  // namespace attnrt
